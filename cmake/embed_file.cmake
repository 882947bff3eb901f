# Writes a C++ source that holds a file's bytes, for files compiled into a program (the
# server's live page): cmake -DINPUT=FILE -DOUTPUT=FILE.cc -DSYMBOL=name -DNAMESPACE=ns -P embed_file.cmake
# gives `std::string_view ns::name()`.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_file.cmake; do not edit.\n"
  "#include <string_view>\n\n"
  "namespace ${NAMESPACE} {\n\n"
  "namespace {\nconstexpr char kBytes[] = {\n    ${bytes}'\\0'};\n}  // namespace\n\n"
  "std::string_view ${SYMBOL}() { return {kBytes, ${size}}; }\n\n"
  "}  // namespace ${NAMESPACE}\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
