#!/bin/bash
# The exact q4 pass's loop for a lone activation row (fk_gemv_q4_f32__x86_64_avx512_exact, the
# loop marked loop2799 at 91d25cd) with one kind of its instructions removed or replaced, hot
# (bench/ab_qcold.c -DHOT: its weights in L2), against the stamp in the same process. The variants'
# outputs are wrong by construction (ab_qcold says DIFFER): only their time means anything.
# Run from the repository's root after the build: bash bench/results/quant-exact-hot/ablate.sh
set -e
S=fk_gemv_q4_f32__x86_64_avx512_exact
F=generated/x86_64/$S.S
T=$(mktemp -d)
b=$(grep -n "LLVM-MCA-BEGIN loop2799" $F | cut -d: -f1)
e=$(grep -n "LLVM-MCA-END loop2799" $F | cut -d: -f1)
top='s/prefetcht0 byte ptr \[rbx + 2304\]/'
zero() { for z in "$@"; do printf 'vpxord zmm%s, zmm%s, zmm%s\\n    ' $z $z $z; done; }
declare -A V=(
  [widen]='s/vpmovzxbd \(zmm[0-9]*\), xmmword ptr/vpbroadcastd \1, dword ptr/'
  [shift]='/vpsrad/d'
  [mul]='/vmulps/d'
  [fma]='/vfmadd231ps/d'
  [perm]='s/vpermps \(zmm[0-9]*\), \(zmm[0-9]*\), \(zmm[0-9]*\)/vmovaps \1, \3/'
  [prefetch]='/prefetcht0/d'
  [all_but_perm_fma]="/vpmovzxbd/d; /vpsrad/d; /vmulps/d; /vcvtph2ps/d; /vbroadcastss/d; /q4_ramp)\]/d; ${top}$(zero 16 17 18 19 20 21 22 23)prefetcht0 byte ptr [rbx + 2304]/"
  [all_but_perm_fma_mul]="/vpmovzxbd/d; /vpsrad/d; /vcvtph2ps/d; /vbroadcastss/d; /q4_ramp)\]/d; s/vmulps \(zmm[0-9]*\), zmm[0-9]*, zmm[0-9]*/vmulps \1, zmm26, zmm26/; ${top}$(zero 26 16 18 20 22)prefetcht0 byte ptr [rbx + 2304]/"
)
gcc -c -x assembler-with-cpp -Igenerated $F -o $T/v0.o
objcopy --redefine-sym $S=ab_v0 $T/v0.o
for name in widen shift mul fma perm prefetch all_but_perm_fma all_but_perm_fma_mul; do
  sed "${b},${e}{${V[$name]}}" $F > $T/v1.S
  gcc -c -x assembler-with-cpp -Igenerated $T/v1.S -o $T/v1.o
  objcopy --redefine-sym $S=ab_v1 $T/v1.o
  gcc -O2 -march=native -DQ4 -DHOT -DBUILDS=2 -Igenerated -Iruntime/include -Ibench bench/ab_qcold.c \
      $T/v0.o $T/v1.o build/libflashkern.a -lpthread -lm -o $T/ab
  echo "== without: $name"
  taskset -c 1 $T/ab 64 8192 7 || true
done
rm -rf $T
