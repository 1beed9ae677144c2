#!/usr/bin/env python3
"""Writes the manual pages logshipd(8), logctl(1) and logshipd.yaml(5) into a directory.

Usage: scripts/generate-manpages.py BIN_PATH OUTPUT_DIR

The command pages come from the binaries' own description of their arguments (swift-argument-parser's
`--experimental-dump-help`, the source of `--help`); the configuration page from config/logshipd.yaml (each key's
comment and default) and the daemon's sources: the keys it knows (ConfigurationLoader.knownKeys), how it parses
each (the ValueParser its `read` call names) and which keys a reload cannot change
(LiveConfiguration.restartOnlyChanges). A key, parser or subcommand the page cannot describe stops the script, so
the pages cannot fall behind the code unnoticed.
"""

import datetime
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DAEMON_SOURCES = os.path.join(ROOT, "Sources", "LogShip", "Daemon")

# What each of the loader's value parsers accepts, as the page says it; `{range}` is the call's range, if any.
# Keys without a default: the loader refuses a configuration that does not set them (a file that lost one while
# being written must not send records to a default).
REQUIRED = {"upload.url"}

PARSER_UNITS = {
    "text": "text",
    "nonEmptyText": "text, not empty",
    "oneOf": "one of {range}",
    "listenAddress": "HOST:PORT, or empty for none",
    "httpURL": "an http:// or https:// URL, or a list of them",
    "compressionLevel": "integer (gzip 1\u20139, zstd 1\u201319)",
    "list": "list (a YAML sequence, or comma-separated text)",
    "severity": "syslog severity 0\u20137 or its name (emerg \u2026 debug)",
    "format": "one of ndjson, json, otlp, otlp-json, journal, loki",
    "journalStart": "head or tail",
    "fileMode": "octal file mode",
    "boolean": "true or false",
    "headerList": "mapping of header names to values",
    "logLevel": "log level (trace, debug, info, notice, warning, error, critical)",
    "integer": "integer, {range}",
    "number": "number, {range}",
    "byteCount": "bytes (also KiB, MiB, GiB), {range}",
    "duration": "duration (ms, s, m, h){range}",
    "byteRate": "bytes per second (KiB/s, MiB/s), 0 or off for none",
    "requestRate": "requests per second, 0 for none",
    "minimumByteRate": "bytes per second (KiB/s, MiB/s)",
}


def roff(text):
    """Escapes text for roff: backslashes, hyphens (as the ASCII ones a reader may copy: option and key names are
    written with them), and a leading dot or quote that would read as a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.split("\n"))


def option_name(name):
    return ("\\-\\-" if name["kind"] == "long" else "\\-") + roff(name["name"])


def paragraphs(text, separator=".PP"):
    """Roff for free text: blank lines part paragraphs, indented lines stay as they are written."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.split("\n")
        if all(line.startswith("  ") for line in lines):
            out += [separator, ".RS 4", ".nf", roff("\n".join(line[2:] for line in lines)), ".fi", ".RE"]
        else:
            out += [separator, roff(" ".join(line.strip() for line in lines))]
    return out


def synopsis_of(argument):
    value = "\\fI" + roff(argument.get("valueName") or "value") + "\\fR"
    if argument["kind"] == "positional":
        text = value + ("\\&..." if argument.get("isRepeating") else "")
    else:
        name = option_name(argument.get("preferredName") or argument["names"][0])
        text = "\\fB" + name + "\\fR" + ("" if argument["kind"] == "flag" else " " + value)
        if argument.get("isRepeating"):
            text += "\\&..."
    return "[" + text + "]" if argument.get("isOptional") else text


def arguments_of(command):
    return [a for a in command.get("arguments") or [] if a.get("shouldDisplay", True)]


def subcommands_of(command):
    return [s for s in command.get("subcommands") or [] if s.get("shouldDisplay", True) and s["commandName"] != "help"]


def synopsis(command, path):
    line = " ".join(synopsis_of(a) for a in arguments_of(command))
    out = [".B " + roff(" ".join(path))] + ([line] if line else [])
    if subcommands_of(command):
        out += [".br", ".B " + roff(" ".join(path)), "\\fIsubcommand\\fR \\&..."]
    return out


def description(command):
    out = paragraphs(command["abstract"]) if command.get("abstract") else []
    return out + (paragraphs(command["discussion"]) if command.get("discussion") else [])


def options(command):
    """A tagged paragraph for each argument: its names, its value, what it does and its default."""
    out = []
    for argument in arguments_of(command):
        if argument["kind"] == "positional":
            tag = "\\fI" + roff(argument.get("valueName") or "value") + "\\fR"
        else:
            tag = ", ".join("\\fB" + option_name(n) + "\\fR" for n in argument.get("names") or [])
            if argument["kind"] == "option":
                tag += " \\fI" + roff(argument.get("valueName") or "value") + "\\fR"
        text = argument.get("abstract") or ""
        if argument.get("discussion"):
            text += "\n\n" + argument["discussion"]
        if argument.get("defaultValue") not in (None, ""):
            text += " (default: " + argument["defaultValue"] + ")"
        out += [".TP", tag] + paragraphs(text, separator=".IP")[1:]
    return out


def walk_subcommands(command, path):
    out = []
    for sub in subcommands_of(command):
        sub_path = path + [sub["commandName"]]
        out += [".SS \"" + roff(" ".join(sub_path)) + "\""] + synopsis(sub, sub_path) + description(sub)
        if arguments_of(sub):
            out += [".PP", "Options:", ".RS 4"] + options(sub) + [".RE"]
        out += walk_subcommands(sub, sub_path)
    return out


def header(name, section, date, version, title):
    return [
        '.\\" Generated by scripts/generate-manpages.py; do not edit.',
        f'.TH {name.upper()} {section} "{date}" "logshipd {version}" "{title}"',
        # No hyphenation: paths, keys and options are copied from the page, and a hyphen added at a break misleads.
        ".nh",
    ]


def command_page(binary, section, date, version, title, see_also):
    info = json.loads(subprocess.run([binary, "--experimental-dump-help"], check=True, capture_output=True).stdout)
    command = info["command"]
    name = command["commandName"]
    out = header(name, section, date, version, title)
    out += [".SH NAME", name + " \\- " + roff(command.get("abstract") or "")]
    out += [".SH SYNOPSIS"] + synopsis(command, [name])
    if command.get("discussion"):
        out += [".SH DESCRIPTION"] + paragraphs(command["discussion"])
    if arguments_of(command):
        out += [".SH OPTIONS"] + options(command)
    subcommands = walk_subcommands(command, [name])
    if subcommands:
        out += [".SH SUBCOMMANDS"] + subcommands
    out += [".SH SEE ALSO", ", ".join("\\fB" + page.replace("(", "\\fR(") for page in see_also)]
    return out


def swift_strings_in(block):
    return re.findall(r'"([a-z_.]+)"', block)


def known_keys():
    source = open(os.path.join(DAEMON_SOURCES, "ConfigurationLoader.swift")).read()
    block = re.search(r"static let knownKeys: Set<String> = \[(.*?)\]", source, re.S).group(1)
    return set(swift_strings_in(block))


def restart_keys():
    source = open(os.path.join(DAEMON_SOURCES, "LiveConfiguration.swift")).read()
    block = re.search(r"func restartOnlyChanges.*?let checks.*?= \[(.*?)\n        \]", source, re.S).group(1)
    return dict(re.match(r"([a-z_.]+)(?: \((.*)\))?$", key).groups() for key in re.findall(r'\("([^"]+)"', block))


def key_units():
    """Each key's unit, from the parser its loader's `read` call names."""
    units = {}
    for name in sorted(os.listdir(DAEMON_SOURCES)):
        if not name.startswith("ConfigurationLoader"):
            continue
        source = open(os.path.join(DAEMON_SOURCES, name)).read()
        for key, parser, arguments in re.findall(
            r'read\(\s*"([a-z_.]+)",\s*into: [^\n]*?,\s*\.(\w+)(?:\(([^\n]*?)\))?\)', source
        ):
            if parser not in PARSER_UNITS:
                sys.exit(f"generate-manpages: {name}: {key} is read with .{parser}, which the page cannot describe")
            shown = re.sub(r"\((\d+) << (\d+)\)", lambda m: str(int(m.group(1)) << int(m.group(2))), arguments + ")")
            bounds = re.fullmatch(r"([\d_.]+)\.\.\.([\d_.]+)", shown)
            shown = f"{bounds.group(1)} to {bounds.group(2)}".replace("_", "") if bounds else "as the description says"
            if parser == "oneOf":
                shown = ", ".join(re.findall(r'"([^"]+)"', arguments)) or "the names the description gives"
            if parser == "duration":
                minimum = re.search(r"\.milliseconds\((\d+)", arguments)
                shown = f", at least {minimum.group(1)} ms" if minimum else ""
            units[key] = PARSER_UNITS[parser].replace("{range}", shown)
    loader = open(os.path.join(DAEMON_SOURCES, "ConfigurationLoader.swift")).read()
    lists = re.search(r"static let listKeys: Set<String> = \[(.*?)\]", loader, re.S).group(1)
    for key in swift_strings_in(lists):
        units.setdefault(key, PARSER_UNITS["list"])
    return units


def configuration_entries(path):
    """The file's introduction and, for each key it shows (commented-out ones too), its comment and default."""
    introduction, entries, comment, stack = [], [], [], []
    for line in open(path).read().split("\n"):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if not stripped:
            if not stack and comment:
                introduction += comment
            comment = []
            continue
        commented_key = re.match(r"#\s([a-z_]+):(?:\s+(.*))?$", stripped)
        if stripped.startswith("#") and not (commented_key and stack):
            comment.append(stripped[1:].strip())
            continue
        match = commented_key if stripped.startswith("#") else re.match(r"([a-z_]+):(?:\s+(.*))?$", stripped)
        if not match:
            comment = []
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = ".".join([s[1] for s in stack] + [match.group(1)])
        value = (match.group(2) or "").split(" #")[0].strip()
        if not value and not stripped.startswith("#"):
            stack.append((indent, match.group(1)))
            if comment:
                entries.append((key, None, comment, False))
        else:
            entries.append((key, value, comment, stripped.startswith("#")))
        comment = []
    return introduction, entries


def configuration_page(date, version):
    known, restart, units = known_keys(), restart_keys(), key_units()
    introduction, entries = configuration_entries(os.path.join(ROOT, "config", "logshipd.yaml"))
    shown = {key for key, value, _, _ in entries if value is not None}
    missing = sorted(known - shown - {"ingest.max_connections_per_process"})
    out = header("logshipd.yaml", 5, date, version, "File Formats Manual")
    out += [".SH NAME", "logshipd.yaml \\- configuration of the logshipd log shipper"]
    out += [".SH SYNOPSIS", "/etc/logshipd/logshipd.yaml"]
    out += [".SH DESCRIPTION"] + paragraphs(" ".join(introduction))
    out += paragraphs(
        "Each key below gives its default, what it takes, and whether a reload (systemctl reload logshipd, "
        "SIGHUP) applies it or it takes a restart. A reload that changes a key that takes a restart is refused "
        "whole, and the running configuration stays."
    )
    out += [".SH KEYS"]
    section = None
    for key, value, comment, commented in entries:
        if value is None:
            if "." not in key:
                continue
            section = key.split(".")[0]
            out += [".SS " + key] + paragraphs(" ".join(comment))
            continue
        if key not in known:
            sys.exit(f"generate-manpages: config/logshipd.yaml shows {key}, which the daemon does not know")
        top = key.split(".")[0]
        if top != section:
            section = top
            out += [".SS " + section]
        if key in REQUIRED:
            default = f"none, it must be set (the shipped file sets {value})"
        else:
            default = "none" if commented else (value if value not in ('""', "''") else '"" (empty)')
        if key not in restart:
            reload = "A reload applies it"
        elif restart[key]:
            reload = f"A reload applies it, but not a change in {restart[key]}, which takes a restart"
        else:
            reload = "A change takes a restart"
        facts = f"Default: {default}. Takes: {units.get(key, 'see below')}. {reload}."
        out += [".TP", "\\fB" + key + "\\fR", roff(facts)]
        if comment:
            out += [".IP", roff(" ".join(comment))]
    if missing:
        sys.exit("generate-manpages: config/logshipd.yaml does not show " + ", ".join(missing))
    out += [".SH ENVIRONMENT"] + paragraphs(
        "Every key can be set by an environment variable named LOGSHIPD_ and the key path in upper case with dots "
        "as underscores (LOGSHIPD_UPLOAD_URL for upload.url); the environment wins over the file."
    )
    out += [".SH SEE ALSO", "\\fBlogshipd\\fR(8), \\fBlogctl\\fR(1)"]
    return out


def page_date():
    """The pages' date: SOURCE_DATE_EPOCH's day when it is set (reproducible builds, scripts/build-deb.sh), else
    the last commit's; a tree with neither stops the script rather than print a page without a date."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime("%Y-%m-%d")
    committed = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%cs"], capture_output=True, text=True)
    if committed.returncode != 0 or not committed.stdout.strip():
        sys.exit("generate-manpages.py: no date for the pages: set SOURCE_DATE_EPOCH outside a git checkout")
    return committed.stdout.strip()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: generate-manpages.py BIN_PATH OUTPUT_DIR")
    bin_path, output = sys.argv[1], sys.argv[2]
    os.makedirs(output, exist_ok=True)
    version_source = open(os.path.join(ROOT, "Sources", "LogShipRecord", "Record", "LogShipVersion.swift")).read()
    version = re.search(r'current = "([^"]+)"', version_source).group(1)
    date = page_date()
    pages = {
        "logshipd.8": command_page(
            os.path.join(bin_path, "logshipd"), 8, date, version, "System Manager's Manual",
            ["logctl(1)", "logshipd.yaml(5)", "systemd.service(5)"]),
        "logctl.1": command_page(
            os.path.join(bin_path, "logctl"), 1, date, version, "User Commands", ["logshipd(8)", "logshipd.yaml(5)"]),
        "logshipd.yaml.5": configuration_page(date, version),
    }
    for name, lines in pages.items():
        with open(os.path.join(output, name), "w") as page:
            page.write("\n".join(line for line in lines if line is not None) + "\n")


if __name__ == "__main__":
    main()
