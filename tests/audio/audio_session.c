/* tests/audio/audio_session.c: see audio_session.h. */
#include "audio_session.h"

#include <inttypes.h>
#include <string.h>

#include "audio_desc.h"

static const int32_t prompt1[8] = { 1, 6, 17, 42, 99, 131, 200, 250 };
static const int32_t prompt2[4] = { 6, 7, 120, 33 };
static const fk_sampling text_s = { 0.8f, 50 }, audio_s = { 0.9f, 64 };

int fkt_audio_step(fkt_audio_sess *s, fk_plan *p, FILE *out) {
  static float logits[1 << 16], flog[FK_CODEBOOKS * 2049];
  fk_error err;
  fk_io io = { .rows = 1, .logits = logits, .frame_logits = flog };
  int32_t force[FK_CODEBOOKS];
  fk_program prog = FK_PROG_AUDIO_STEP;
  fk_state_info st = fk_state_query(p);
  if (s->done) return 0;
  if (s->call == 0 || (s->turn == 1 && st.audio_turn == 2)) { /* a turn's prefill */
    int second = s->call != 0;
    prog = FK_PROG_AUDIO_PREFILL;
    io.tokens = second ? prompt2 : prompt1;
    io.rows = second ? 4 : 8;
    io.loop = second ? FK_AUDIO_INTERLEAVED : FK_AUDIO_SEQUENTIAL;
    s->turn = second ? 2 : 1;
    s->text_steps = s->turn_frames = 0;
  }
  if (s->turn == 2) {
    io.sampling = &text_s;
    io.audio_sampling = &audio_s;
  }
  if (prog == FK_PROG_AUDIO_PREFILL || st.audio_modality == FK_AUDIO_TEXT) {
    int k = ++s->text_steps;
    int32_t f = s->turn == 1 ? (k == 3 ? 128 : k == 5 ? 7 : -1) : (k == 5 ? 130 : k == 6 ? 7 : -1);
    if (f >= 0) {
      force[0] = f;
      io.force = force;
    }
  } else if (s->turn_frames == (s->turn == 1 ? 3 : 8)) { /* turn 1's 4th frame, turn 2's 9th end the audio */
    for (int c = 0; c < FK_CODEBOOKS; c++) force[c] = c == 0 ? 2048 : 100 + c;
    io.force = force;
  }
  if (fk_run(p, prog, &io, &err) != FK_OK) {
    fprintf(stderr, "fkt_audio_step: call %d: %s\n", s->call, err.message);
    return -1;
  }
  st = fk_state_query(p);
  if (out) {
    fprintf(out, "call %d %s out %d", s->call, prog == FK_PROG_AUDIO_PREFILL ? "prefill" : "step", (int)io.out);
    if (io.out == FK_AUDIO_OUT_FRAME) {
      fprintf(out, " frame");
      for (int c = 0; c < FK_CODEBOOKS; c++) fprintf(out, " %d", (int)io.frame[c]);
      fprintf(out, " drawn");
      for (int c = 0; c < FK_CODEBOOKS; c++) fprintf(out, " %d", (int)io.drawn[c]);
      fprintf(out, " logits %016" PRIx64, fkt_audio_fnv(flog, sizeof flog, 0));
    } else {
      fprintf(out, " next %d drawn %d logits %016" PRIx64, (int)io.next, (int)io.drawn[0],
              fkt_audio_fnv(logits, 4 * 256, 0));
    }
    fprintf(out, " modality %d turn %d pos %" PRId64 " draws %" PRIu64 "\n", (int)io.modality, (int)st.audio_turn,
            st.audio_pos, st.draws);
  }
  if (io.out == FK_AUDIO_OUT_FRAME) {
    s->turn_frames++;
    if (s->nframes < FKT_AUDIO_MAX_FRAMES) memcpy(s->frames[s->nframes++], io.frame, sizeof io.frame);
  }
  s->call++;
  if (s->turn == 2 && st.audio_turn == 2) s->done = 1;
  return 1;
}
