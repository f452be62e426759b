# Turns a binary file into a C header holding it as an aligned byte array (cmake -P, no other tools needed).
# Usage: cmake -DINPUT=file.fatbin -DOUTPUT=file.h -DNAME=symbol -P embed.cmake
if(NOT INPUT OR NOT OUTPUT OR NOT NAME)
  message(FATAL_ERROR "embed.cmake needs INPUT, OUTPUT and NAME")
endif()
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_len)
if(hex_len EQUAL 0)
  message(FATAL_ERROR "embed.cmake: ${INPUT} is empty")
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 row) # CMake regexes have no {n}
string(REGEX REPLACE "(${row})" "\\1\n  " bytes "${bytes}")
file(WRITE "${OUTPUT}"
  "// ${NAME}: generated at build time by embed.cmake; do not edit.\n"
  "#pragma once\n"
  "alignas(64) static const unsigned char ${NAME}[] = {\n  ${bytes}\n};\n")
