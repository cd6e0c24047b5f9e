"""How to rebuild a model in another process, for eager replay (eager_replay.py): an importable
factory named "module:callable", and the folders its module imports from.

Given explicitly (``Recorder(model_factory="mypkg.models:build")``, or the function itself), or,
when the model's class takes no constructor argument, that class. A factory defined in the
training script itself is named by the script's path; eager replay imports it under its own
name, so the script's training must sit under ``if __name__ == "__main__":``."""
import inspect
import os
import sys


def _importable_root(module_name):
    """The folder that makes `module_name` importable (above its package folders), or None."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    root = os.path.dirname(os.path.abspath(path))
    if os.path.basename(path) == "__init__.py":
        root = os.path.dirname(root)
    for _ in module_name.split(".")[1:]:
        root = os.path.dirname(root)
    return root


def _takes_no_arguments(cls):
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return False
    return all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters)


def describe(factory, model):
    """(spec, import folders, why not): spec is "module:callable" or "/path/script.py:callable";
    None with the reason when there is no way to name one."""
    if isinstance(factory, str):
        if ":" not in factory:
            return None, [], "model_factory '%s' is not 'module:callable'" % factory
        return factory, [os.getcwd()], None
    if factory is None:
        cls = type(model)
        if not _takes_no_arguments(cls):
            return None, [], ("%s takes constructor arguments; pass model_factory='module:function' (a function "
                              "that builds the model with no arguments) to make state_dict checkpoints replayable"
                              % cls.__name__)
        factory = cls
    module_name = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if not module_name or not qualname or "<" in qualname:
        return None, [], ("model_factory %r cannot be imported by name (a lambda or a local function); define it "
                          "at the top level of a module" % (factory,))
    folders = [os.getcwd()]
    if module_name == "__main__":
        script = getattr(sys.modules.get("__main__"), "__file__", None)
        if not script:
            return None, [], "the model is defined in an interactive session: no file to import it from"
        script = os.path.abspath(script)
        if os.path.dirname(script) not in folders:
            folders.insert(0, os.path.dirname(script))
        return "%s:%s" % (script, qualname), folders, None
    root = _importable_root(module_name)
    if root and root not in folders:
        folders.insert(0, root)
    return "%s:%s" % (module_name, qualname), folders, None
