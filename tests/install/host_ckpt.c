/* tests/install/host_ckpt.c: a host of the *installed* checkpoint loader (libflashkern_ckpt,
 * fk_checkpoint.h; tests/install_host.sh builds it through find_package, static and shared, when
 * the build has FK_BUILD_CHECKPOINTS). It links fk_model_open and the core library beneath it:
 * a directory that does not exist must be refused with FK_ENOTFOUND, *out NULL, and a message
 * naming it. Prints the library's version and the refusal; exit 0 only then. */
#include <stdio.h>
#include <string.h>

#include <fk_checkpoint.h>

int main(void) {
  const char *dir = "/nonexistent/flashkern-install-host";
  fk_model *m = (fk_model *)&dir;
  fk_error err;
  fk_status s = fk_model_open(dir, FK_MODEL_AUTO, &m, &err);
  if (s != FK_ENOTFOUND || m != NULL || !strstr(err.message, dir)) {
    fprintf(stderr, "host_ckpt: fk_model_open(%s): %s: %s\n", dir, fk_strerror(s), s ? err.message : "accepted");
    return 1;
  }
  fk_model_close(NULL);
  printf("flashkern %s checkpoint loader: %s\n", fk_version(), err.message);
  return 0;
}
