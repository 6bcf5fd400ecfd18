# Shell helpers shared by the comparison scripts (compare-oiio.sh, compare-ptex.sh):
# sourced, not run.

# Run a command, echoing it to stderr first.
run() {
  echo "+ $*" >&2
  "$@"
}

# The value of a numeric or string key in a one-line JSON object.
json_get() {
  local key=$1 line=$2
  printf '%s\n' "$line" | sed -n "s/.*\"$key\":\"\\{0,1\\}\\([^,\"}]*\\).*/\\1/p"
}

# The median of the numbers on standard input, one a line ("nan" for none).
median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
