#!/usr/bin/env bash
# format.sh — applies .clang-format to every C/C++ source and header; --check only reports.
#
# Usage: scripts/format.sh           rewrite the files in place (clang-format -i)
#        scripts/format.sh --check   list the files clang-format would change; exit 1 if any
#                                    (77, with the reason, if clang-format is not installed)
# Files: in a git checkout, the tracked and the new (not ignored) *.c *.h *.cpp *.hpp; otherwise
# those found under the source directories. CLANG_FORMAT names another clang-format binary;
# versions can disagree, so format and check with the same one.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
SOURCE_DIRS=(bench common examples fortran include libpcm pcmctl pcmd python relay testbed tests)

usage() { sed -n '4,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac

if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
  if [ "$check" -eq 1 ]; then
    echo "SKIPPED: $CLANG_FORMAT is not installed (apt-get install clang-format)"
    exit 77
  fi
  echo "format.sh: $CLANG_FORMAT is not installed (apt-get install clang-format)" >&2
  exit 1
fi
cd "$ROOT"
[ -f .clang-format ] || { echo "format.sh: no .clang-format in $ROOT" >&2; exit 1; }

files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r -d '' f; do
    [ -f "$f" ] && files+=("$f")
  done < <(git ls-files -z --cached --others --exclude-standard -- '*.c' '*.h' '*.cpp' '*.hpp' |
    sort -z)
else
  dirs=()
  for d in "${SOURCE_DIRS[@]}"; do [ -d "$d" ] && dirs+=("$d"); done
  if [ ${#dirs[@]} -gt 0 ]; then
    while IFS= read -r -d '' f; do
      files+=("$f")
    done < <(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \
      -o -name '*.hpp' \) -print0 | sort -z)
  fi
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "format.sh: no C/C++ files found under $ROOT" >&2
  exit 1
fi

if [ "$check" -eq 0 ]; then
  "$CLANG_FORMAT" -i --style=file "${files[@]}"
  echo "format.sh: formatted ${#files[@]} files with $("$CLANG_FORMAT" --version)"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  "$CLANG_FORMAT" --dry-run --Werror --style=file "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "format.sh: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:"
  printf '  %s\n' "${bad[@]}"
  echo "Fix them with scripts/format.sh; see one with: $CLANG_FORMAT --dry-run FILE"
  exit 1
fi
echo "format.sh: all ${#files[@]} files formatted ($("$CLANG_FORMAT" --version))"
