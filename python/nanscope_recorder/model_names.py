"""The names a user knows a model's modules and parameters by, where a wrapper adds its own: PEFT's
PeftModel holds the user's model as base_model.model, so named_modules() says
"base_model.model.transformer.h.0.attn.c_attn" for the user's "transformer.h.0.attn.c_attn". The
recorder's tables and eager replay's module paths both use these names; checkpoints keep the
state_dict's own keys, which is what loading them needs."""

_PEFT_PREFIX = "base_model.model."


def wrapper_prefix_of(model):
    """The prefix a wrapper puts before the user's names ("base_model.model." for PEFT), or "":
    written into run.h5 (module_path_prefix) for what names modules by the wrapper's paths, an
    exported program's graph above all, to take off."""
    wrapped = isinstance(getattr(model, "peft_config", None), dict) and \
        getattr(getattr(model, "base_model", None), "model", None) is not None
    return _PEFT_PREFIX if wrapped else ""


def user_name_of(model):
    """A function from a named_modules()/named_parameters() name of `model` to the user's name."""
    wrapped = isinstance(getattr(model, "peft_config", None), dict) and \
        getattr(getattr(model, "base_model", None), "model", None) is not None
    if not wrapped:
        return lambda name: name

    def user_name(name):
        if name.startswith(_PEFT_PREFIX):
            return name[len(_PEFT_PREFIX):]
        return "" if name + "." == _PEFT_PREFIX or name == "base_model" else name  # the wrappers: the root
    return user_name


def is_transformers_model(model):
    """A transformers or PEFT model (hf.py rebuilds them from their config), by its classes'
    modules: nothing is imported to tell."""
    return any(getattr(cls, "__module__", "").startswith(("transformers.", "peft.")) for cls in type(model).__mro__)


def uncompiled(model):
    """The module a torch.compile wrapper holds, or the model itself: a torch.compile'd model (torch
    2.x's OptimizedModule) wraps the module the user wrote, whose names and state are the user's."""
    original = getattr(model, "_orig_mod", None)
    if original is not None and type(model).__name__ == "OptimizedModule":
        return original
    return model
