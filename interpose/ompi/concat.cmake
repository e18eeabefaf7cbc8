# Concatenates the files listed in IN (separated by |) into OUT.
# Usage: cmake "-DIN=a|b" -DOUT=c -P concat.cmake
string(REPLACE "|" ";" _files "${IN}")
set(_all "")
foreach(f IN LISTS _files)
  file(READ ${f} _text)
  string(APPEND _all "${_text}")
endforeach()
file(WRITE ${OUT}.tmp "${_all}")
file(RENAME ${OUT}.tmp ${OUT})
