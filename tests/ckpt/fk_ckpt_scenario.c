/* tests/ckpt/fk_ckpt_scenario.c: one checkpoint directory opened by the loader and run, printed as
 * digests; tests/ckpt/test_ckpt_fixtures.c runs it natively and under qemu-aarch64 on every
 * fixtures/ckpt/ directory and compares the lines: the loader (its reading, its f32 -> bf16
 * conversion) and the programs give the same bits on both ISAs.
 *   what fk_model_query reports; an FNV-1a of every tensor fk_model_tensor serves of the parts no
 *   descriptor carries (an LFM2.5-Audio directory's Depthformer, depth_linear, depth_embeddings,
 *   audio_embedding); then a plan of every family the checkpoint has (fk_model_describe, programs 0)
 *   runs the model scenario's session (tests/model/session.c: prompt, greedy and sampled decode,
 *   every step's residual stream, logits, the detokenizer's frames and PCM, the state).
 * Usage: fk_ckpt_scenario DIR THREADS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fk_checkpoint.h"
#include "model_desc.h"
#include "session.h"

static void check(fk_status s, const fk_error *err) {
  if (s == FK_OK) return;
  fprintf(stderr, "fk_ckpt_scenario: %s: %s\n", fk_strerror(s), err->message);
  exit(1);
}

static void tensor(const fk_model *m, const char *name) {
  fk_tensor_view v;
  fk_error err;
  check(fk_model_tensor(m, name, &v, &err), &err);
  size_t n = v.dtype == FK_DTYPE_BF16 ? 2 : 4;
  for (int k = 0; k < v.ndim; k++) n *= (size_t)v.shape[k];
  printf("tensor %s %s %016llx\n", name, v.dtype == FK_DTYPE_BF16 ? "bf16" : "f32",
         (unsigned long long)fkt_fnv(v.data, n, 0));
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: fk_ckpt_scenario DIR THREADS\n");
    return 2;
  }
  fk_model *m;
  fk_error err;
  check(fk_model_open(argv[1], FK_MODEL_AUTO, &m, &err), &err);
  fk_model_info in;
  check(fk_model_query(m, &in, &err), &err);
  printf("%s: vocab %lld hidden %lld ffn %lld layers %lld heads %lld/%lld max_pos %lld theta %g eps %g tied %d "
         "files %d tensors %lld ignored %lld dtype %s owned %llu det %lld/%lld/%lld\n",
         in.architecture, (long long)in.vocab, (long long)in.hidden, (long long)in.ffn, (long long)in.layers,
         (long long)in.heads, (long long)in.kv_heads, (long long)in.max_pos, (double)in.rope_theta,
         (double)in.norm_eps, in.tied, in.files, (long long)in.tensors, (long long)in.ignored, in.dtype,
         (unsigned long long)in.owned_bytes, (long long)in.det_hidden, (long long)in.det_layers,
         (long long)in.det_window);
  if (in.kind == FK_MODEL_LFM2_AUDIO) {
    char name[128];
    static const char *const block[] = { "operator.qkv_proj.weight", "operator.out_proj.weight",
                                         "operator.bounded_attention.q_layernorm.weight",
                                         "operator.bounded_attention.k_layernorm.weight", "feed_forward.w1.weight",
                                         "feed_forward.w3.weight", "feed_forward.w2.weight", "operator_norm.weight",
                                         "ffn_norm.weight" };
    for (int64_t l = 0; l < in.depth_layers; l++)
      for (size_t k = 0; k < sizeof block / sizeof block[0]; k++) {
        snprintf(name, sizeof name, "depthformer.layers.%lld.%s", (long long)l, block[k]);
        tensor(m, name);
      }
    tensor(m, "depth_linear.weight");
    tensor(m, "depth_linear.bias");
    for (int64_t c = 0; c < in.codebooks; c++) {
      snprintf(name, sizeof name, "depth_embeddings.%lld.embedding.weight", (long long)c);
      tensor(m, name);
      snprintf(name, sizeof name, "depth_embeddings.%lld.embedding_norm.weight", (long long)c);
      tensor(m, name);
    }
    tensor(m, "audio_embedding.embedding.weight");
    tensor(m, "audio_embedding.embedding_norm.weight");
  }
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.threads = atoi(argv[2]);
  d.tier = FK_TIER_EXACT;
  check(fk_model_describe(m, &d, &err), &err);
  fk_plan *p;
  check(fk_plan_create(&d, &p, &err), &err);
  fk_model_close(m); /* the plan keeps nothing of the model */
  int bad = 0;
  if (d.programs & FK_PROGRAMS_LM) bad |= fkt_session_lm_run(p, d.lm.vocab, stdout);
  if (d.programs & FK_PROGRAMS_DETOK) bad |= fkt_session_detok_run(p, d.detok.codebook_vocab, stdout);
  fk_plan_destroy(p);
  return bad ? 1 : 0;
}
