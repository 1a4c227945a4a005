"""Two q4 layouts without the widening, as loop bodies (timing only: the stamp's packed weights are
read as if interleaved, so the outputs are wrong by construction). The exact q4 stamp at 91d25cd
(fk_gemv_q4_f32__x86_64_avx512_exact) with its lone-row loop body replaced; per record, per 64
bytes (two rows), the four blocks' tables as the stamp makes them, then per block o and parity p
an index vector:

  offsets: the even nibbles by a 64-byte load at byte offset o (blocks interleaved bytewise: lane j
           of block o at byte 4j + o), the odd ones by the same load shifted right 4 (VPSRLD m512);
  stack:   the 64 bytes shifted right 4 once, stored to the stack, the odd nibbles loaded from there
           at the offsets.

  python3 bench/results/quant-exact-hot/layouts.py offsets > /tmp/offsets.S   (from the root)
then build it as build 1 of bench/ab_qcold.c -DHOT -DQ4 -DBUILDS=2 against the stamp (ablate.sh's
way)."""
import sys

variant = sys.argv[1]
S = 'fk_gemv_q4_f32__x86_64_avx512_exact'
src = open('generated/x86_64/%s.S' % S).read().split('\n')
start = [i for i, l in enumerate(src) if l.startswith('FK_L(%s_tiles140):' % S)][0]
end = [i for i, l in enumerate(src) if i > start and l.strip().startswith('add rbx, 144')][0]
ramp = 'zmmword ptr [rip + FK_SYM(%s_k_t_q4_ramp)]' % S
body = ['    prefetcht0 byte ptr [rbx + 2304]', '    prefetcht0 byte ptr [rbx + 2368]',
        '    prefetcht0 byte ptr [rbx + 2432]',
        '    vcvtph2ps ymm16, xmmword ptr [r11 + 128]', '    vmovups zmmword ptr [rsp], zmm16']
for c in range(2):
    for o in range(4):
        r, h = 2 * c + o // 2, o % 2
        body.append('    vbroadcastss zmm%d, dword ptr [rsp + %d]' % (16 + 2 * o, 4 * (2 * r + h)))
        body.append('    vmulps zmm%d, zmm%d, %s' % (17 + 2 * o, 16 + 2 * o, ramp))
    if variant == 'stack':
        body.append('    vpsrld zmm24, zmmword ptr [rbx + %d], 4' % (64 * c))
        body.append('    vmovups zmmword ptr [rsp + %d], zmm24' % (64 + 128 * c))
    for o in range(4):
        r, h = 2 * c + o // 2, o % 2
        for p in range(2):
            ch = 2 * h + p
            if p == 0:
                body.append('    vmovdqu32 zmm25, zmmword ptr [rbx + %d]' % (64 * c + o))
            elif variant == 'stack':
                body.append('    vmovdqu32 zmm25, zmmword ptr [rsp + %d]' % (64 + 128 * c + o))
            else:
                body.append('    vpsrld zmm25, zmmword ptr [rbx + %d], 4' % (64 * c + o))
            body.append('    vpermps zmm25, zmm25, zmm%d' % (17 + 2 * o))
            body.append('    vfmadd231ps zmm%d, zmm25, zmmword ptr [r10 + %d]' % (4 * r + ch, 64 * ch))
src[start + 1:end] = body
sys.stdout.write('\n'.join(src))
