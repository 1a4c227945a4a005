#!/bin/bash
# builds ab_qcold for the exact q4k and q4 AVX-512 f32 stamps, cold and hot
set -e
D=/work/main
for fmt in q4k q4; do
  S=fk_gemv_${fmt}_f32__x86_64_avx512_exact
  gcc -c -x assembler-with-cpp -I$D/generated $D/generated/x86_64/$S.S -o v0_$fmt.o
  objcopy --redefine-sym $S=ab_v0 v0_$fmt.o
  F=$( [ $fmt = q4k ] && echo -DQ4K || echo -DQ4 )
  gcc -O2 -march=native $F -DBUILDS=1 -I$D/generated -I$D/runtime/include -I$D/bench $D/bench/ab_qcold.c v0_$fmt.o $D/build/libflashkern.a -lpthread -lm -o abq_$fmt
  gcc -O2 -march=native $F -DHOT -DBUILDS=1 -I$D/generated -I$D/runtime/include -I$D/bench $D/bench/ab_qcold.c v0_$fmt.o $D/build/libflashkern.a -lpthread -lm -o abqh_$fmt
done
