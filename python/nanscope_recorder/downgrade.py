"""Rewrites a run.h5 in the HDF5 file format nanscope's HDF5 reads (1.10's).

A run.h5 written with libver="latest" by a newer HDF5 (h5py 3.16 and later bundle HDF5 2.0) holds
object headers that HDF5 1.10 refuses ("bad version number for layout message"); nanscope says so
and names this command. Every group, dataset and attribute is copied value for value into a new
file; the source is only read.

    python -m nanscope_recorder.downgrade OLD/run.h5 NEW/run.h5
"""
import argparse
import os
import sys

import h5py

# The oldest and newest format versions the copy may use: 1.10's, which has all SWMR needs.
FORMAT_BOUNDS = ("v110", "v110")
_ROWS_PER_COPY = 1 << 16


def _copy_attributes(source, target):
    for name, value in source.attrs.items():
        target.attrs[name] = value


def _copy_group(source, target):
    _copy_attributes(source, target)
    for name, item in source.items():
        if isinstance(item, h5py.Group):
            _copy_group(item, target.create_group(name))
        else:
            # Written anew (not H5Ocopy, which would keep the newer object header), with the
            # source's chunking and filters, so that the run still grows and is read as before.
            dataset = target.create_dataset(name, shape=item.shape, chunks=item.chunks, maxshape=item.maxshape,
                                            compression=item.compression, compression_opts=item.compression_opts,
                                            fletcher32=item.fletcher32, dtype=item.dtype)
            if item.shape:
                for start in range(0, item.shape[0], _ROWS_PER_COPY):  # bounded memory for long runs
                    dataset[start:start + _ROWS_PER_COPY] = item[start:start + _ROWS_PER_COPY]
            elif item.shape is not None:
                dataset[()] = item[()]
            _copy_attributes(item, dataset)


def downgrade(source_path, target_path):
    if os.path.abspath(source_path) == os.path.abspath(target_path):
        raise ValueError("%s: the copy must go to another file; the source is never written" % source_path)
    if os.path.exists(target_path):
        raise FileExistsError("%s already exists; name a new file" % target_path)
    partial = target_path + ".partial"
    try:
        with h5py.File(source_path, "r") as source, h5py.File(partial, "w", libver=FORMAT_BOUNDS) as target:
            _copy_group(source, target)
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise
    os.replace(partial, target_path)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nanscope_recorder.downgrade", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="the run.h5 to read")
    parser.add_argument("target", help="the new file to write (must not exist)")
    options = parser.parse_args(argv)
    try:
        downgrade(options.source, options.target)
    except (OSError, ValueError) as error:
        print("nanscope_recorder.downgrade: %s" % error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
