#!/usr/bin/env python3
"""Enforces fsdpsim's code-size limits as a ratchet.

Usage: scripts/check_sizes.py [--root DIR] [--limits FILE:CLASS:FUNCTION] [--write-allowed | --expect-failure]

Limits (lines, inclusive): a C++ file (*.h, *.cpp, *.cu) 700, a class/struct/union body 300, a function body 80
(from the line naming the function to its closing brace; lambdas and local classes count as part of the function
that holds them, a function defined inside a class body is a function too). The offenders that exist today are
listed in <root>/scripts/size_limits_allowed.txt as `KIND<TAB>PATH<TAB>NAME<TAB>LINES`; the check fails for an
offender that is not listed, for a listed one that grew, and for a listed one that is no longer over its limit
(so the list only ever shrinks and stays true). --write-allowed rewrites the list from the tree.

The parser is a brace walker, not a C++ front end: comments, string/char literals and preprocessor lines are
blanked first, then each `{` is classified by the text since the previous `;`, `{` or `}` of its scope. On
syntax it does not recognise it measures nothing (a false negative) rather than inventing an offender.
"""
import argparse
import bisect
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SOURCE_SUFFIXES = ('.h', '.cpp', '.cu')
# Never scanned besides .git, top-level build trees and any third_party folder: fixtures and fuzz inputs.
SKIPPED_DIRS = ('tests/data', 'fuzz/corpus', 'fuzz/regressions')
ALLOWED_LIST = 'scripts/size_limits_allowed.txt'
KINDS = ('file', 'class', 'function')
LIST_HEADER = ('# Code over the size limits of scripts/check_sizes.py, as KIND<TAB>PATH<TAB>NAME<TAB>LINES.\n'
               '# It only shrinks: split code rather than add a line or raise a count; after a split,\n'
               '# scripts/check_sizes.py --write-allowed rewrites it.\n')


@dataclass(frozen=True)
class Item:
    """One measured thing: a file, a class body or a function body."""
    kind: str
    path: str
    name: str
    line: int
    lines: int

    @property
    def key(self):
        """What the list of known exceptions identifies an item by."""
        return (self.kind, self.path, self.name)


# ---------------------------------------------------------------------------------------------------------------
# Finding the sources.

def is_build_tree(root, top):
    """Whether the top-level folder `top` is a build tree (build, build-asan, ...), not sources such as builders/."""
    return bool(re.fullmatch(r'build(?:[-_.].*)?', top)) or (
        top.startswith('build') and os.path.exists(os.path.join(root, top, 'CMakeCache.txt')))


def source_files(root):
    """Every C++ source under the top-level folders of root, as sorted root-relative '/' paths."""
    found = []
    for top in sorted(os.listdir(root)):
        if top == '.git' or is_build_tree(root, top) or not os.path.isdir(os.path.join(root, top)):
            continue
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            rel_folder = Path(folder).relative_to(root).as_posix()
            # Pruning in place keeps os.walk out of the skipped folders (and makes the walk order deterministic).
            dirs[:] = sorted(d for d in dirs
                             if d != 'third_party' and f'{rel_folder}/{d}' not in SKIPPED_DIRS)
            found.extend(f'{rel_folder}/{f}' for f in files if f.endswith(SOURCE_SUFFIXES))
    return sorted(found)


def count_lines(text):
    """Lines as `wc -l` counts them, plus an unterminated last line."""
    return text.count('\n') + (1 if text and not text.endswith('\n') else 0)


# ---------------------------------------------------------------------------------------------------------------
# Blanking what is not code, keeping every offset and newline so positions map back to lines.

_NOT_CODE = re.compile(r'''
    (?P<raw>(?<![\w])(?:u8|u|U|L)?R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)")
  | (?P<line_comment>//(?:[^\n\\]|\\.)*)
  | (?P<block_comment>/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>(?<![\w.])\.?\d(?:[eEpP][+-]|'(?=\w)|[\w.])*)
  | (?P<char>'(?:[^'\\\n]|\\.)+')
  | (?P<directive>^[ \t]*\#(?:[^\n\\]|\\.)*)
''', re.VERBOSE | re.DOTALL | re.MULTILINE)


def skip_space(s, i):
    """Index of the first non-space character of s at or after i (len(s) if none)."""
    return len(s) - len(s[i:].lstrip())


def _blank(text):
    """Spaces for every character of text except newlines."""
    return re.sub(r'[^\n]', ' ', text)


def _blank_match(m):
    """Replacement for one _NOT_CODE match: literals keep their quotes (so `extern "C"` stays recognisable)."""
    kind, text = m.lastgroup, m.group()
    if kind == 'number':  # matched only so that digit separators (1'000) are not read as char literals
        return text
    if kind in ('string', 'raw'):
        return '"' + _blank(text[1:-1]) + '"'
    if kind == 'char':
        return "'" + _blank(text[1:-1]) + "'"
    return _blank(text)


def strip_code(text):
    """text with comments, literals and preprocessor lines blanked; same length, same newlines."""
    return _NOT_CODE.sub(_blank_match, text)


# ---------------------------------------------------------------------------------------------------------------
# Small scanners over blanked code.

_OPEN, _CLOSE = '([{', ')]}'


def matching_close(s, i):
    """Index of the bracket closing the one at s[i], or None."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] in _OPEN:
            depth += 1
        elif s[j] in _CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return None


def matching_open(s, i):
    """Index of the bracket opening the one closed at s[i], or None."""
    depth = 0
    for j in range(i, -1, -1):
        if s[j] in _CLOSE:
            depth += 1
        elif s[j] in _OPEN:
            depth -= 1
            if depth == 0:
                return j
    return None


def is_balanced(s):
    """Whether every bracket of s closes inside s (a heading inside an open call is an expression)."""
    depth = 0
    for c in s:
        depth += (c in _OPEN) - (c in _CLOSE)
        if depth < 0:
            return False
    return depth == 0


def skip_angles(s, i):
    """Index just past the template argument list opening at s[i] == '<', or None if it does not close."""
    depth = 0
    j = i
    while j < len(s):
        c = s[j]
        if c in '([':
            j = matching_close(s, j)
            if j is None:
                return None
        elif c == '<':
            depth += 1
        elif c == '>' and s[j - 1] != '-':
            depth -= 1
            if depth == 0:
                return j + 1
        elif c in ';{}':
            return None
        j += 1
    return None


def blank_nested_braces(s):
    """s with the inside of each `{...}` blanked: braces of initialisers that preceded this heading."""
    out = list(s)
    i = s.find('{')
    while i != -1:
        j = matching_close(s, i)
        if j is None:
            break
        out[i + 1:j] = _blank(s[i + 1:j])
        i = s.find('{', j + 1)
    return ''.join(out)


# ---------------------------------------------------------------------------------------------------------------
# Classifying the heading of a `{` at namespace or class scope.

_ACCESS = re.compile(r'(?:\s*(?:public|private|protected)\s*:(?!:))*\s*')
_TRAILING_WORD = re.compile(r'(?:(?<![\w])(?:const|volatile|noexcept|override|final|mutable|constexpr|try)'
                            r'|&&|&)\s*$')
_QUALIFIED_BEFORE_ARROW = re.compile(r'\)\s*(?:(?:const|volatile|noexcept|mutable|constexpr|&&|&)\s*)*$')
_OPERATOR = re.compile(r'(?<![\w])((?:[A-Za-z_]\w*\s*::\s*)*operator(?![\w])\s*(?:\(\s*\)|\[\s*\]|"\s*"\s*\w+'
                       r'|(?:new|delete)(?:\s*\[\s*\])?|[^\w\s()\[\]{};]+|[A-Za-z_][\w:<>*&\s]*?))\s*$')
_IDENT_END = re.compile(r'(~?\s*[A-Za-z_]\w*)\s*$')
_NOT_A_NAME = {'if', 'for', 'while', 'switch', 'catch', 'return', 'sizeof', 'decltype', 'alignas', 'alignof',
               'noexcept', 'requires', 'static_assert', 'typeid', 'throw', 'new', 'delete'}


def trailing_return_start(f):
    """Offset of a trailing `-> Type` after a parameter list, or None (`operator->` has no `)` before it)."""
    depth = 0
    for i, c in enumerate(f):
        depth += (c in _OPEN) - (c in _CLOSE)
        if depth == 0 and f.startswith('->', i) and _QUALIFIED_BEFORE_ARROW.search(f[:i]):
            return i
    return None


def strip_trailing(f):
    """f without what may follow a parameter list: cv/ref qualifiers, noexcept(...), override, -> Type."""
    while True:
        f = f.rstrip()
        m = _TRAILING_WORD.search(f)
        if m:
            f = f[:m.start()]
            continue
        if f.endswith(')'):
            o = matching_open(f, len(f) - 1)
            if o is not None and re.search(r'(?<![\w])(?:noexcept|throw)\s*$', f[:o]):
                f = f[:o]
                continue
        arrow = trailing_return_start(f)
        if arrow is None:
            return f
        f = f[:arrow]


def is_init_list(s):
    """Whether s is a constructor's member/base initialiser list: `a_(x), b_{y}, Base<T>(z)...`."""
    i = 0
    while True:
        m = re.compile(r'\s*[A-Za-z_][\w:]*\s*').match(s, i)
        if not m:
            return False
        i = m.end()
        if s.startswith('<', i):
            i = skip_angles(s, i)
            if i is None:
                return False
            i = skip_space(s, i)
        if i >= len(s) or s[i] not in '({':
            return False
        j = matching_close(s, i)
        if j is None:
            return False
        rest = s[j + 1:].lstrip()
        rest = rest[3:].lstrip() if rest.startswith('...') else rest
        if not rest:
            return True
        if rest[0] != ',':
            return False
        i = len(s) - len(rest) + 1


def cut_init_list(body):
    """body up to a constructor initialiser list's `:` (the list is not part of the signature), else body."""
    depth = 0
    for i, c in enumerate(body):
        depth += (c in _OPEN) - (c in _CLOSE)
        if depth or c != ':' or body[i - 1:i] == ':' or body[i + 1:i + 2] == ':':
            continue
        if strip_trailing(body[:i]).endswith(')') and is_init_list(body[i + 1:]):
            return body[:i]
    return body


def callee_name(before):
    """(name, start offset) of the function whose parameter list follows `before`, or None."""
    m = _OPERATOR.search(before)
    if m:
        return re.sub(r'\s+', ' ', m.group(1)).replace(' ::', '::').replace(':: ', '::'), m.start(1)
    if before.rstrip().endswith('>'):  # an explicit specialisation, f<int>(...): name the template
        o = before.rstrip()
        depth, i = 0, len(o) - 1
        while i >= 0:
            depth += (o[i] == '>') - (o[i] == '<')
            if depth == 0:
                break
            i -= 1
        before = o[:max(i, 0)]
    m = _IDENT_END.search(before)
    if not m or m.group(1).strip('~ ') in _NOT_A_NAME:
        return None
    start = m.start(1)
    # Walk back over `Class::` and `ns::Class<T>::` qualifiers so out-of-line members keep their class.
    while True:
        q = re.search(r'([A-Za-z_]\w*(?:\s*<[^;{}()]*>)?)\s*::\s*$', before[:start])
        if not q:
            break
        start = q.start(1)
    return re.sub(r'\s+', '', before[start:m.end(1)]), start


def lambda_heading(body):
    """('function', '<lambda>', offset) if body ends with a lambda's `[captures](params) specifiers`."""
    f = strip_trailing(body)
    if f.endswith(')'):
        o = matching_open(f, len(f) - 1)
        if o is None:
            return None
        f = f[:o].rstrip()
    if not f.endswith(']'):
        return None
    o = matching_open(f, len(f) - 1)
    if o is None or f.startswith('[[', o):
        return None
    before = f[:o].rstrip()
    if before and (before[-1].isalnum() or before[-1] in '_)]'):  # a subscript, not a capture list
        return None
    return 'function', '<lambda>', o


def function_heading(body):
    """('function', name, offset of the name) if body is a function's signature (or a lambda's), else None."""
    found = lambda_heading(body)
    if found or not is_balanced(body):  # an open `(` means the `{` is inside an expression
        return found
    f = strip_trailing(cut_init_list(body))
    if not f.endswith(')'):
        return None
    o = matching_open(f, len(f) - 1)
    named = callee_name(f[:o]) if o is not None else None
    if named is None:
        return None
    name, start = named
    if re.fullmatch(r'[A-Z][A-Z0-9_]*', name):  # TEST(Suite, Name) and the like: the arguments tell them apart
        name += '(' + ' '.join(f[o + 1:-1].split()) + ')'
    return 'function', name, start


def skip_declaration_prefix(body):
    """Offset in body past leading `template <...>` parameter lists and `[[attributes]]`."""
    i = skip_space(body, 0)
    while True:
        if re.compile(r'template\s*<').match(body, i):
            end = skip_angles(body, body.index('<', i))
        elif body.startswith('[[', i):
            end = matching_close(body, i)
            end = None if end is None else end + 1
        else:
            return i
        if end is None:
            return i
        i = skip_space(body, end)


def class_heading(body):
    """('class', name, offset of the class-key) if body heads a class/struct/union definition, else None."""
    m = re.compile(r'(class|struct|union)(?![\w])\s*').match(body, skip_declaration_prefix(body))
    if not m:
        return None
    j = m.end()
    while True:  # [[attributes]] and alignas(...) between the class-key and the name
        a = re.compile(r'(\[)\[|alignas\s*(\()').match(body, j)
        if not a:
            break
        k = matching_close(body, a.start(1) if a.group(1) else a.start(2))
        if k is None:
            return None
        j = skip_space(body, k + 1)
    name, j = class_name(body, j)
    rest = body[j:]
    if not re.fullmatch(r'\s*(?:final\s*)?(?::(?!:)[^;=]*)?', rest) or not is_balanced(rest):
        return None
    return 'class', name, m.start()


def class_name(body, j):
    """(name, offset past it) of the possibly qualified, possibly specialised class name at body[j:]."""
    start = j
    while True:
        n = re.compile(r'[A-Za-z_]\w*\s*').match(body, j)
        if not n:
            break
        j = n.end()
        if body.startswith('<', j):
            k = skip_angles(body, j)
            if k is None:
                break
            j = k
        q = re.compile(r'\s*::\s*').match(body, j)
        if not q:
            break
        j = q.end()
    return re.sub(r'\s+', '', body[start:j]) or '<anonymous>', j


def classify(heading):
    """(kind, name, offset of the name in heading) for the `{` that follows heading at namespace or class scope.

    kind is 'namespace' (also `extern "C"`, both transparent), 'class', 'function' or 'other' (initialisers, enum
    bodies, anything not recognised: not measured).
    """
    h = blank_nested_braces(heading)
    lead = _ACCESS.match(h).end()
    body = h[lead:].rstrip()
    if re.match(r'(?:inline\s+)?namespace(?![\w])', body) or re.fullmatch(r'extern\s*"\s*"', body):
        return 'namespace', None, 0
    found = function_heading(body) or class_heading(body)
    if found:
        return found[0], found[1], lead + found[2]
    tail = body.rfind('}') + 1
    if tail and re.match(r'\s*[A-Za-z_~]', body[tail:]):
        # An unrecognised brace that closed without a `;` (a function-try-block's catch, say) left its text in
        # this heading; a declaration may start after its last `}` (never `}, b_(2)` of an initialiser list).
        kind, name, offset = classify(body[tail:])
        return kind, name, lead + tail + offset
    return 'other', None, 0


# ---------------------------------------------------------------------------------------------------------------
# Walking the braces of one file.

@dataclass
class _Scope:
    """A `{` not yet closed."""
    kind: str  # namespace, class, function, other, or nested (any brace inside a function or an initialiser)
    name: str
    start: int  # offset of the name (or class-key): the body's first line
    heading_start: int  # the enclosing heading, resumed when an initialiser closes (`: a_{1}, b_(2) {`)


def walk(code):
    """(kind, name, start offset, close offset) of each class and function body; None if braces do not balance."""
    stack, found, heading = [], [], 0
    for m in re.finditer(r'[{};]', code):
        c, pos = m.group(), m.start()
        inside_body = bool(stack) and stack[-1].kind in ('function', 'other', 'nested')
        if c == ';':
            heading = heading if inside_body else pos + 1
        elif c == '{' and inside_body:
            stack.append(_Scope('nested', '', pos, heading))
        elif c == '{':
            kind, name, offset = classify(code[heading:pos])
            # The nearest class frame already carries its outer classes: `Outer::Inner`.
            outer = next((s.name + '::' for s in reversed(stack) if s.kind == 'class'), '')
            stack.append(_Scope(kind, outer + (name or ''), heading + offset, heading))
            heading = pos + 1
        elif not stack:
            return None
        else:
            scope = stack.pop()
            if scope.kind in ('class', 'function'):
                found.append((scope.kind, scope.name, scope.start, pos))
            heading = scope.heading_start if scope.kind == 'other' else pos + 1
    return None if stack else sorted(found, key=lambda f: f[2])


def measure_file(root, rel):
    """The Items of one source file: itself, then its class and function bodies in order of appearance."""
    text = (Path(root) / rel).read_text(encoding='utf-8', errors='replace')
    items = [Item('file', rel, '-', 1, count_lines(text))]
    bodies = walk(strip_code(text))
    if bodies is None:
        print(f'warning: {rel}: braces do not balance once comments and literals are blanked; '
              'only its length is checked', file=sys.stderr)
        return items
    line_starts = [0] + [m.end() for m in re.finditer('\n', text)]
    seen = {}
    for kind, name, start, close in bodies:
        first = bisect.bisect_right(line_starts, start)
        # Overloads (and #if/#else twins) share a name: number the later ones so every key stays unique.
        seen[(kind, name)] = seen.get((kind, name), 0) + 1
        unique = name if seen[(kind, name)] == 1 else f'{name} #{seen[(kind, name)]}'
        items.append(Item(kind, rel, unique, first, bisect.bisect_right(line_starts, close) - first + 1))
    return items


# ---------------------------------------------------------------------------------------------------------------
# The ratchet.

def measure_tree(root):
    """Every Item of every source under root."""
    return [item for rel in source_files(root) for item in measure_file(root, rel)]


def read_allowed(path):
    """{(kind, path, name): lines} from the list at path (missing: empty); raises ValueError on a bad line."""
    allowed = {}
    if not path.exists():
        return allowed
    for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        if not line.strip() or line.startswith('#'):
            continue
        fields = line.split('\t')
        if len(fields) != 4 or fields[0] not in KINDS or not fields[3].isdigit():
            raise ValueError(f'{path}:{number}: expected KIND<TAB>PATH<TAB>NAME<TAB>LINES, got {line!r}')
        allowed[tuple(fields[:3])] = int(fields[3])
    return allowed


def write_allowed(path, offenders):
    """Writes the list of today's offenders, sorted, under a header that says how to treat it."""
    rows = sorted(f'{o.kind}\t{o.path}\t{o.name}\t{o.lines}' for o in offenders)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LIST_HEADER + ''.join(row + '\n' for row in rows), encoding='utf-8')


def describe(item):
    """`path:line: kind name` as the messages name an item."""
    what = 'the file' if item.kind == 'file' else f'{item.kind} {item.name}'
    return f'{item.path}:{item.line}: {what}'


def problems(items, offenders, allowed, limits):
    """Messages for each new offender, each listed one that grew, and each listed one that is no longer over."""
    out = []
    for o in offenders:
        recorded = allowed.get(o.key)
        if recorded is None:
            out.append(f'{describe(o)} is {o.lines} lines (limit {limits[o.kind]}): a new offender. Split it into '
                       f'smaller pieces; do not add it to {ALLOWED_LIST}, which only shrinks.')
        elif o.lines > recorded:
            out.append(f'{describe(o)} is {o.lines} lines (limit {limits[o.kind]}), grown from the {recorded} '
                       f'recorded in {ALLOWED_LIST}. Split it until it is back to {recorded} lines or fewer; '
                       'the list only shrinks.')
    over = {o.key for o in offenders}
    measured = {i.key: i for i in items}
    for key in sorted(set(allowed) - over):
        kind, path, name = key
        what = f'{kind} {path}' + ('' if kind == 'file' else f' {name}')
        now = (f'is now {measured[key].lines} lines, within the limit of {limits[kind]}' if key in measured
               else 'no longer exists (removed or renamed)')
        out.append(f'{ALLOWED_LIST}: {what} (recorded at {allowed[key]} lines) {now}. Delete its line so the '
                   'list stays true.')
    return out


# ---------------------------------------------------------------------------------------------------------------
# Command line.

def parse_args(argv):
    """The command line, with --limits turned into {kind: lines}."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--root', type=Path, default=Path(__file__).resolve().parent.parent,
                   help='the source tree to check (default: the repository holding this script)')
    p.add_argument('--limits', default='700:300:80', help='FILE:CLASS:FUNCTION line limits (default 700:300:80)')
    mode = p.add_mutually_exclusive_group()
    mode.add_argument('--write-allowed', action='store_true',
                      help=f'rewrite <root>/{ALLOWED_LIST} from the tree (after shrinking offenders)')
    mode.add_argument('--expect-failure', action='store_true',
                      help='invert the result: succeed only if the check finds a problem (tests of the check)')
    args = p.parse_args(argv)
    if not re.fullmatch(r'\d+:\d+:\d+', args.limits):
        p.error(f'--limits wants FILE:CLASS:FUNCTION, three line counts, not {args.limits!r}')
    args.limits = dict(zip(KINDS, map(int, args.limits.split(':'))))
    return args


def check(args):
    """Runs the check; 0 when nothing is wrong, 1 otherwise (before --expect-failure)."""
    items = measure_tree(args.root)
    offenders = [i for i in items if i.lines > args.limits[i.kind]]
    list_path = args.root / ALLOWED_LIST
    if args.write_allowed:
        write_allowed(list_path, offenders)
        print(f'wrote {len(offenders)} exceptions to {list_path}')
        return 0
    allowed = read_allowed(list_path)
    found = problems(items, offenders, allowed, args.limits)
    for message in found:
        print(message)
    counts = {kind: sum(i.kind == kind for i in items) for kind in KINDS}
    checked = f"{counts['file']} files, {counts['class']} classes, {counts['function']} functions checked"
    if found:
        print(f'size limits: {len(found)} problem(s); {checked}')
        return 1
    shrunk = sum(o.lines < allowed[o.key] for o in offenders)
    if shrunk:  # not an error, but the list could be tighter
        print(f'note: {shrunk} known exception(s) shrank; scripts/check_sizes.py --write-allowed records it')
    print(f'size limits: {checked}; {len(allowed)} known exceptions, none grew')
    return 0


def main(argv=None):
    """Exit status: 0 (passed), 1 (problems found), 2 (unusable list or tree); --expect-failure swaps 0 and 1."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        status = check(args)
    except (OSError, ValueError) as e:
        print(f'check_sizes: {e}', file=sys.stderr)
        return 2
    if args.expect_failure:
        outcome = 'failed, as expected' if status else 'passed, which was not expected'
        print(f'(--expect-failure: the check {outcome})')
        return 0 if status else 1
    return status


if __name__ == '__main__':
    sys.exit(main())
