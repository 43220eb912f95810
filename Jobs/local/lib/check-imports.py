#!/usr/bin/env python3
"""Every `import` of every Swift target names one of the target's *direct* dependencies in Package.swift (or a
module of the toolchain). SwiftPM's own --explicit-target-dependency-import-check accepts any module reachable
through the dependency graph, so it would let the command line import Storage through Job; this does not.
Reads `swift package dump-package`; exits 1 listing each import that breaks the rule, with file and line."""
import json, os, re, subprocess, sys

TOOLCHAIN = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Dispatch", "Synchronization",
             "Testing", "XCTest", "_Concurrency", "PackagePlugin", "Darwin", "os"}
IMPORT = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:public\s+|package\s+|internal\s+|fileprivate\s+|private\s+)?"
                    r"import\s+(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)")


def main() -> int:
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    package = json.loads(subprocess.run(["swift", "package", "--package-path", root, "dump-package"], check=True,
                                        capture_output=True, text=True).stdout)
    problems = []
    for target in package["targets"]:
        if target["type"] == "system":
            continue
        default = {"test": "Tests", "plugin": "Plugins"}.get(target["type"], "Sources")
        path = os.path.join(root, target.get("path") or os.path.join(default, target["name"]))
        allowed = set(TOOLCHAIN)
        for dependency in target["dependencies"]:
            (kind, value), = dependency.items()
            allowed.add(value[0])  # byName, target and product: the first element is the module's name
        for directory, _, files in os.walk(path):
            for name in sorted(files):
                if not name.endswith(".swift"):
                    continue
                file = os.path.join(directory, name)
                with open(file, encoding="utf-8") as source:
                    for number, line in enumerate(source, 1):
                        match = IMPORT.match(line)
                        if match and match.group(1) not in allowed:
                            problems.append(f"{os.path.relpath(file, root)}:{number}: target {target['name']} imports "
                                            f"{match.group(1)}, which is not among its dependencies in Package.swift")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
