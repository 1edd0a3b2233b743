"""Offline check of recipe/recipe.yaml against pyproject.toml.

Parses and renders the recipe with rattler-build (py-rattler-build) for each
conda-forge platform, with compiler/stdlib variants like conda-forge's, and checks
what a drifting recipe would get wrong: version, skipped Pythons, compilers,
OpenMP per platform, host and run requirements, tests, license. It does not run
conda-forge's linter, solve the environments or fetch the source.
"""

import re
import sys
import tomllib
from pathlib import Path

import rattler_build as rb
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"zlib-ng": "python-zlib-ng"}  # PyPI name -> conda-forge name
PYTHONS = ["3.11", "3.12", "3.13", "3.14"]
# target platform: (build platform, compiler, stdlib, stdlib version, OpenMP package)
PLATFORMS = {
    "linux-64": ("linux-64", "gcc", "sysroot", "2.17", "libgomp"),
    "linux-aarch64": ("linux-64", "gcc", "sysroot", "2.17", "libgomp"),
    "osx-64": ("osx-64", "clang", "macosx_deployment_target", "10.13", "llvm-openmp"),
    "osx-arm64": ("osx-64", "clang", "macosx_deployment_target", "11.0", "llvm-openmp"),
    "win-64": ("win-64", "vs2022", "vs", "2022", None),
}


def conda_spec(requirement):
    req = Requirement(requirement)
    name = CONDA_NAMES.get(req.name.lower(), req.name.lower())
    return f"{name} {req.specifier}".strip()


def main():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    version = re.search(r'__version__ = "(.+)"', (ROOT / "n5mscodecs/_version.py").read_text())[1]
    min_python = re.fullmatch(r">=(\d+\.\d+)", project["requires-python"])[1]
    recipe = rb.Stage0Recipe.from_file(ROOT / "recipe" / "recipe.yaml")
    errors = []

    def expect(condition, message):
        if not condition:
            errors.append(message)

    expect(recipe.context.get("version") == version,
           f"recipe version {recipe.context.get('version')} != package version {version}")
    skip = recipe.build.to_dict().get("skip", [])
    expect(skip == [f'match(python, "<{min_python}")'], f"build.skip {skip} does not follow requires-python")
    expect(recipe.about.to_dict().get("license") == project["license"], "about.license != project.license")
    expect((ROOT / "LICENSE").is_file(), "LICENSE missing")

    run_expected = {"python"} | {conda_spec(r) for r in project["dependencies"]}
    host_expected = {"python", "pip"} | {conda_spec(r) for r in pyproject["build-system"]["requires"]
                                        if not r.startswith("numpy")}
    for target, (build, compiler, stdlib, stdlib_version, openmp) in PLATFORMS.items():
        variants = rb.VariantConfig({"python": PYTHONS, "numpy": ["2"], "c_compiler": [compiler],
                                     "c_stdlib": [stdlib], "c_stdlib_version": [stdlib_version]})
        config = rb.RenderConfig(platform=rb.PlatformConfig(target_platform=target, build_platform=build))
        rendered = recipe.render(variants, config)
        expect(sorted(r.variant["python"] for r in rendered) == PYTHONS, f"{target}: python variants")
        stage1 = rendered[0].recipe
        reqs = stage1.requirements.to_dict()
        names = {kind: {spec.split()[0] for spec in reqs.get(kind, [])} for kind in ("build", "host", "run")}
        expect(f"{compiler}_{target}" in names["build"], f"{target}: no C compiler in build")
        expect(f"{stdlib}_{target}" in names["build"], f"{target}: no C stdlib in build")
        if build != target:
            expect(f"cross-python_{target}" in names["build"], f"{target}: no cross-python for a cross build")
        expect(host_expected <= set(reqs["host"]) and "numpy" in names["host"],
               f"{target}: host {reqs['host']} lacks some of {sorted(host_expected)} + numpy")
        openmp_host = {"libgomp", "llvm-openmp"} & names["host"]
        expect(openmp_host == ({openmp} if openmp else set()), f"{target}: OpenMP in host is {openmp_host}")
        run = set(reqs["run"]) - {"llvm-openmp"}
        expect(run == run_expected, f"{target}: run {sorted(run)} != pyproject {sorted(run_expected)}")
        expect(("llvm-openmp" in names["run"]) == (openmp == "llvm-openmp"), f"{target}: llvm-openmp in run")

    tests = stage1.to_dict()["tests"]
    imports = [name for t in tests if "python" in t for name in t["python"]["imports"]]
    scripts = [line for t in tests if "script" in t for line in t["script"]]
    sources = [path for t in tests if "files" in t for path in t["files"].get("source", [])]
    expect("n5mscodecs" in imports, "no import test of n5mscodecs")
    expect(any("pytest" in line and "tests" in line for line in scripts), "no test-suite run")
    expect(any(line.startswith("n5ms ") for line in scripts), "no n5ms command test")
    expect({"tests/", "fuzz/", "conftest.py", "pyproject.toml"} <= set(sources), "tests do not copy the test sources")
    source = stage1.to_dict()["source"][0]
    expect(source["url"].endswith(f"/n5mscodecs-{version}.tar.gz"), f"source url {source['url']}")

    if not stage1.to_dict().get("extra", {}).get("recipe-maintainers"):
        print("recipe: note: extra.recipe-maintainers is empty (conda-forge requires it)")
    if errors:
        sys.exit("recipe:\n  " + "\n  ".join(errors))
    print(f"recipe: {len(PLATFORMS)} platforms x {len(PYTHONS)} Pythons rendered, consistent with pyproject.toml")


if __name__ == "__main__":
    main()
