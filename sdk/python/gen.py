#!/usr/bin/env python3
"""Generates the parts of the Airlock Python SDK that must not be written
by hand, so that they cannot drift from their sources:

- airlock/_types.py from the OpenAPI document (internal/api/openapi.json):
  a dataclass for every schema (and for every object a schema holds
  inline), and a TypedDict of keyword arguments for every request body;
- airlock/_sync/*.py from airlock/_async/*.py, by rewriting the asyncio
  code as blocking code (the "unasync" approach of httpcore), so that the
  two clients are one implementation. _backend.py, the only I/O that
  differs, is written by hand on both sides.

    python3 gen.py            # rewrite the generated files
    python3 gen.py --check    # exit 1, with a diff, when they are stale
    python3 gen.py --out DIR  # write them under DIR instead

It is deterministic and uses only the standard library.
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import os
import re
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SPEC = os.path.join(HERE, "..", "..", "internal", "api", "openapi.json")
HAND_WRITTEN = {"_backend.py"}  # differs between the two sides on purpose

# ---------------------------------------------------------------- types


def camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", s) if p)


class TypeGen:
    """Turns components.schemas into Python source."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.schemas: dict = spec["components"]["schemas"]
        self.classes: list[str] = []  # emitted dataclass sources, in order
        self.emitted: dict[str, str] = {}  # class name -> canonical JSON of its schema
        self.inline_by_shape: dict[str, str] = {}  # canonical JSON -> class name
        self.params: list[str] = []
        self.params_done: set[str] = set()
        self.dataclass_names: list[str] = []
        self.current = ""  # the field whose type is being made, for docs

    # A schema's Python type, as source text. owner names the class an
    # inline object would be named after.
    def pytype(self, s: dict, owner: str, params: bool = False) -> str:
        if not s:
            return "Any"
        if "$ref" in s:
            name = s["$ref"].rsplit("/", 1)[1]
            self.need(name)
            if params and self.is_object(self.schemas[name]):
                self.need_params(name)
                return f"{name} | {name}Params"
            return name
        for comb in ("oneOf", "anyOf"):
            if comb in s:
                alts = [a for a in s[comb] if a.get("type") != "null"]
                nullable = len(alts) != len(s[comb])
                t = " | ".join(dict.fromkeys(self.pytype(a, owner, params) for a in alts)) or "None"
                return t + (" | None" if nullable and t != "None" else "")
        if "allOf" in s:
            return self.inline(s, owner)
        typ = s.get("type")
        if isinstance(typ, list):
            alts = [t for t in typ if t != "null"]
            t = " | ".join(self.pytype({**s, "type": a}, owner, params) for a in alts)
            return t + (" | None" if "null" in typ else "")
        if "enum" in s:
            return "Literal[" + ", ".join(json.dumps(v) for v in s["enum"]) + "]"
        if typ == "string":
            if s.get("format") == "date-time":
                return "datetime | str" if params else "datetime"
            if s.get("contentEncoding") == "base64":
                return "bytes"
            return "str"
        if typ == "integer":
            return "int"
        if typ == "number":
            return "float"
        if typ == "boolean":
            return "bool"
        if typ == "array":
            item = owner[:-1] if owner.endswith("s") else owner + "Item"
            return f"list[{self.pytype(s.get('items', {}), item, params)}]"
        if typ == "object" or "properties" in s:
            if "properties" in s:
                if params:
                    return "dict[str, Any]"
                return self.inline(s, owner)
            ap = s.get("additionalProperties")
            if isinstance(ap, dict):
                return f"dict[str, {self.pytype(ap, owner, params)}]"
            return "dict[str, Any]"
        return "Any"

    def is_object(self, s: dict) -> bool:
        return "properties" in s or "allOf" in s

    def inline(self, s: dict, name: str) -> str:
        """The class of an object schema held inline: reused when an
        identical one was emitted, else named after where it sits."""
        shape = json.dumps(s, sort_keys=True)
        if shape in self.inline_by_shape:
            return self.inline_by_shape[shape]
        base, n = name, 1
        if name in self.schemas or name in self.emitted:
            name = base + "Info"
        while name in self.schemas or name in self.emitted:
            n += 1
            name = f"{base}Info{n}"
        self.inline_by_shape[shape] = name
        self.emit(name, s, f"The object of {self.current} in the Airlock API.")
        return name

    def need(self, name: str) -> None:
        if name not in self.emitted and self.is_object(self.schemas[name]):
            self.emit(name, self.schemas[name])

    def emit(self, name: str, s: dict, what: str = "") -> None:
        self.emitted[name] = json.dumps(s, sort_keys=True)
        base = None
        props: dict = {}
        required: set = set()
        parts = s["allOf"] if "allOf" in s else [s]
        for part in parts:
            if "$ref" in part and base is None and "allOf" in s:
                base = part["$ref"].rsplit("/", 1)[1]
                self.need(base)
                continue
            if "$ref" in part:  # a second base: copy its fields
                part = self.schemas[part["$ref"].rsplit("/", 1)[1]]
            props.update(part.get("properties", {}))
            required.update(part.get("required", []))
        fields = []
        for pname, ps in props.items():
            self.current = f"{name}.{pname}"
            t = self.pytype(ps, name + camel(pname))
            fields.append((pname, ps, t, pname in required and not self.nullable(ps)))
        lines = ["@dataclass(kw_only=True, slots=True)",
                 f"class {name}{'(' + base + ')' if base else ''}:"]
        lines += doc(s.get("description") or what or f"The schema {name} of the Airlock API.", "    ")
        for pname, ps, t, req in fields:
            attr = pname + "_" if keyword.iskeyword(pname) else pname
            if ps.get("description"):
                lines += comment(ps["description"], "    ")
            meta = f'metadata={{"json": "{pname}"}}' if attr != pname else ""
            if req:
                lines.append(f"    {attr}: {t}" + (f" = field({meta})" if meta else ""))
            else:
                tt = t if t.endswith("| None") or t == "Any" else t + " | None"
                dflt = f"field(default=None, {meta})" if meta else "None"
                lines.append(f"    {attr}: {tt} = {dflt}")
        if not fields and not base:
            lines.append("    pass")
        self.classes.append("\n".join(lines))
        self.dataclass_names.append(name)

    @staticmethod
    def nullable(s: dict) -> bool:
        t = s.get("type")
        if isinstance(t, list) and "null" in t:
            return True
        return any(a.get("type") == "null" for a in s.get("oneOf", []) + s.get("anyOf", []))

    def need_params(self, name: str) -> None:
        if name in self.params_done:
            return
        self.params_done.add(name)
        s = self.schemas[name]
        props, required = {}, set()
        for part in s.get("allOf", [s]):
            if "$ref" in part:
                part = self.schemas[part["$ref"].rsplit("/", 1)[1]]
            props.update(part.get("properties", {}))
            required.update(part.get("required", []))
        items = []
        for pname, ps in props.items():
            t = self.pytype(ps, name + camel(pname), params=True)
            items.append((pname, f"Required[{t}]" if pname in required else t))
        pname_ = f"{name}Params"
        head = doc(f"Keyword arguments of {name} (the request's JSON fields).", "    ")
        if any(keyword.iskeyword(k) for k, _ in items) or not items:
            body = ", ".join(f'"{k}": {t}' for k, t in items)
            src = f'{pname_} = TypedDict("{pname_}", {{{body}}}, total=False)'
        else:
            src = "\n".join([f"class {pname_}(TypedDict, total=False):"] + head +
                            [f"    {k}: {t}" for k, t in items])
        self.params.append(src)

    def request_bodies(self) -> list[str]:
        names = []
        for ops in self.spec["paths"].values():
            for op in ops.values():
                if not isinstance(op, dict):
                    continue
                content = op.get("requestBody", {}).get("content", {})
                ref = content.get("application/json", {}).get("schema", {}).get("$ref")
                if ref:
                    names.append(ref.rsplit("/", 1)[1])
        return sorted(set(names))

    def source(self) -> str:
        for name in self.schemas:
            self.need(name)
        for name in self.request_bodies():
            self.need_params(name)
        aliases = []
        for name, s in self.schemas.items():
            if not self.is_object(s):
                aliases.append(f"{name} = {self.pytype(s, name)}")
                self.dataclass_names.append(name)
        info = self.spec.get("info", {})
        out = [HEADER.format(title=info.get("title", ""), version=info.get("version", ""))]
        out += self.classes
        out += aliases
        # The functional TypedDicts (a field named like a keyword: "from",
        # "continue") are evaluated at import, so they come after the
        # classes they name (whose annotations are strings).
        out += sorted(self.params, key=lambda src: (not src.startswith("class "), src))
        names = sorted(set(self.dataclass_names) | {n + "Params" for n in self.params_done})
        out.append("SCHEMAS: dict[str, Any] = {\n" +
                   "".join(f'    "{n}": {n},\n' for n in self.schemas) + "}")
        out.append("__all__ = [\n" + "".join(f'    "{n}",\n' for n in names + ["SCHEMAS"]) + "]")
        return "\n\n\n".join(out) + "\n"


HEADER = '''"""Types of the Airlock API ({title} {version}).

Generated by sdk/python/gen.py from internal/api/openapi.json; do not
edit. A dataclass per schema (answers are decoded into them) and a
TypedDict per request body (the keyword arguments of the client's methods).
Fields the server leaves out are None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Required, TypedDict'''


def doc(text: str, indent: str) -> list[str]:
    text = " ".join(text.split()).replace("\\", "\\\\").replace('"""', "'''")
    lines = textwrap.wrap(text, 76 - len(indent)) or [""]
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}'] + [indent + ln for ln in lines[1:]] + [f'{indent}"""']


def comment(text: str, indent: str) -> list[str]:
    text = " ".join(text.split())
    return [f"{indent}#: {ln}" for ln in textwrap.wrap(text, 76 - len(indent))]


# ---------------------------------------------------------------- unasync

# Whole-word replacements, applied in order, that turn the asyncio client
# into the blocking one.
UNASYNC = [
    (r"\basync def\b", "def"),
    (r"\basync for\b", "for"),
    (r"\basync with\b", "with"),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\b__aiter__\b", "__iter__"),
    (r"\b__anext__\b", "__next__"),
    (r"\bStopAsyncIteration\b", "StopIteration"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAsyncIterable\b", "Iterable"),
    (r"\baclose\b", "close"),
    (r"\baiter_bytes\b", "iter_bytes"),
    (r"\baiter_raw\b", "iter_raw"),
    (r"\baread\b", "read"),
    (r"\baclosing\b", "closing"),
    (r"\bhttpx\.AsyncClient\b", "httpx.Client"),
    (r"\b_async\b", "_sync"),
    (r"\bAsync([A-Z]\w*)", r"\1"),
    (r"\basyncio\b", "blocking"),
]


def unasync(src: str, name: str) -> str:
    for pat, rep in UNASYNC:
        src = re.sub(pat, rep, src)
    head = f"# Generated by sdk/python/gen.py from airlock/_async/{name}; do not edit.\n"
    return head + src


# ---------------------------------------------------------------- main


def generate(spec_path: str) -> dict[str, str]:
    """Every generated file, by its path under sdk/python."""
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    files = {os.path.join("airlock", "_types.py"): TypeGen(spec).source()}
    adir = os.path.join(HERE, "airlock", "_async")
    for name in sorted(os.listdir(adir)):
        if name.endswith(".py") and name not in HAND_WRITTEN:
            with open(os.path.join(adir, name), encoding="utf-8") as f:
                files[os.path.join("airlock", "_sync", name)] = unasync(f.read(), name)
    return files


def stale(files: dict[str, str], root: str) -> list[str]:
    """Unified diffs of the committed files against files, plus generated
    files under root that nothing generates any more."""
    diffs = []
    for rel, want in files.items():
        path = os.path.join(root, rel)
        try:
            with open(path, encoding="utf-8") as f:
                have = f.read()
        except FileNotFoundError:
            have = ""
        if have != want:
            diffs.append("".join(difflib.unified_diff(
                have.splitlines(True), want.splitlines(True), "committed/" + rel, "generated/" + rel)))
    sdir = os.path.join(root, "airlock", "_sync")
    for name in sorted(os.listdir(sdir)) if os.path.isdir(sdir) else []:
        rel = os.path.join("airlock", "_sync", name)
        if name.endswith(".py") and name not in HAND_WRITTEN and rel not in files:
            diffs.append(f"{rel}: generated from nothing (its airlock/_async source is gone)\n")
    return diffs


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default=DEFAULT_SPEC, help="the OpenAPI document")
    ap.add_argument("--out", default=HERE, help="where to write (default: this SDK)")
    ap.add_argument("--check", action="store_true", help="only report stale files")
    args = ap.parse_args(argv)
    files = generate(args.spec)
    if args.check:
        diffs = stale(files, HERE)
        for d in diffs:
            sys.stdout.write(d)
        if diffs:
            print(f"gen.py: {len(diffs)} generated file(s) differ from {os.path.relpath(args.spec)}; "
                  "run python3 sdk/python/gen.py", file=sys.stderr)
        return 1 if diffs else 0
    for rel, text in files.items():
        path = os.path.join(args.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".gen-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
