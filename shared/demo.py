"""`make demo`: run each built stage's demo (shared/demos/sNN_<name>.py), in stage order."""

from __future__ import annotations

import importlib
import pkgutil

from shared import demos


def main() -> None:
    names = sorted(m.name for m in pkgutil.iter_modules(demos.__path__) if m.name[:1] == "s")
    for name in names:
        title = f" stage {int(name[1:3])}: {name[4:].replace('_', ' ')} "
        print(f"\n{title:=^78}\n")
        importlib.import_module(f"shared.demos.{name}").main()


if __name__ == "__main__":
    main()
