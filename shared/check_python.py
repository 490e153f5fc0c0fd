"""Check the interpreter `make setup` is about to use, before it builds a virtual environment.

Run as `PYTHON shared/check_python.py [VENV_PYTHON]`. Exits 0 when PYTHON can install the pinned
versions (jax/jaxlib 0.10.2 and torch 2.13.0 publish wheels for CPython 3.11 to 3.14), and, when
VENV_PYTHON is given, when the existing virtual environment was made with the same Python version.
Written without f-strings so that an old interpreter still prints the message rather than a
SyntaxError.
"""

# ruff: noqa: UP031  (percent formatting, so an old interpreter reaches the message)
import subprocess
import sys

SUPPORTED = ((3, 11), (3, 12), (3, 13), (3, 14))  # the pinned wheels exist for these


def _version_of(python):
    out = subprocess.check_output(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
    )
    return tuple(int(p) for p in out.decode().strip().split("."))


def main(argv):
    here = sys.version_info[:2]
    if here not in SUPPORTED:
        low, high = SUPPORTED[0], SUPPORTED[-1]
        sys.stderr.write(
            "Under the API needs CPython %d.%d to %d.%d (the pinned jax/jaxlib and torch publish "
            "wheels for those); %s is %d.%d.\nChoose another interpreter, e.g. "
            "`make test PYTHON=python3.12`.\n"
            % (low + high + (sys.executable,) + here)
        )
        return 1
    if len(argv) > 1:
        venv = _version_of(argv[1])
        if venv != here:
            sys.stderr.write(
                "The existing virtual environment (%s) was made with Python %d.%d, but the "
                "interpreter asked for is %s (%d.%d).\nRemove it (`rm -rf %s`) or give "
                "another one with VENV=.venv-%d.%d.\n"
                % ((argv[1],) + venv + (sys.executable,) + here
                   + (argv[1].rsplit("/bin/", 1)[0],) + here)
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
