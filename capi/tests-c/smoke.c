/* A C11 smoke test of the C ABI, compiled and run by the unit test
 * `tests::compile::c_program_runs_the_multi_pass_loop` against the freshly built
 * libdemandtex.so. Exits 0 on success; prints what failed otherwise. */
#include "demandtex.h"
#include "demandtex.h" /* twice: the include guards hold */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    DtexStatus s_ = (call);                                                            \
    if (s_ != DTEX_STATUS_OK) {                                                        \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,             \
              dtex_status_string(s_), dtex_last_error_message());                      \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);            \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

typedef struct Ramp {
  int opened, closed, not_yet_left;
} Ramp;

static int32_t ramp_open(void *user, DtexImageInfo *info) {
  Ramp *r = (Ramp *)user;
  r->opened++;
  info->width = 256;
  info->height = 128;
  info->texel_type = DTEX_TEXEL_F32;
  info->channels = 1;
  info->num_levels = 1;
  return DTEX_SOURCE_READY;
}

static int32_t ramp_read(void *user, const DtexTileRegion *region, void *dest, size_t dest_bytes,
                         size_t row_bytes) {
  Ramp *r = (Ramp *)user;
  (void)dest_bytes;
  if (r->not_yet_left > 0) { /* one fill thread (see main): no race */
    r->not_yet_left--;
    return DTEX_SOURCE_NOT_YET;
  }
  for (uint32_t y = 0; y < region->height; y++) {
    float *row = (float *)((char *)dest + y * row_bytes);
    for (uint32_t x = 0; x < region->width; x++) row[x] = (float)(region->x + x) / 256.0f;
  }
  return DTEX_SOURCE_READY;
}

static void ramp_close(void *user) { ((Ramp *)user)->closed++; }

int main(void) {
  EXPECT(dtex_version() == DTEX_VERSION_MAJOR * 10000 + DTEX_VERSION_MINOR * 100 + DTEX_VERSION_PATCH);
  EXPECT(dtex_abi_version() == DTEX_ABI_VERSION);
  EXPECT(strcmp(dtex_status_string(DTEX_STATUS_OK), "DTEX_STATUS_OK") == 0);

  DtexLoaderOptions options;
  dtex_loader_options_default(&options);
  options.num_pages = 1u << 20;
  options.max_texture_memory = 64u << 20;
  options.fill_threads = 1; /* ramp_read's counter is not atomic */
  DtexLoader loader;
  CHECK(dtex_loader_create(&options, &loader));

  DtexProceduralDesc proc;
  dtex_procedural_desc_default(&proc);
  proc.width = proc.height = 1024;
  uint32_t checker;
  CHECK(dtex_texture_create_procedural(loader, &proc, NULL, &checker));

  Ramp ramp = {0, 0, 3};
  DtexImageSourceCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.user_data = &ramp;
  cb.open = ramp_open;
  cb.read_region = ramp_read;
  cb.close = ramp_close;
  DtexTextureDesc desc;
  dtex_texture_desc_default(&desc);
  desc.filter = DTEX_FILTER_POINT;
  uint32_t ramp_tex;
  CHECK(dtex_texture_create_from_callbacks(loader, &cb, "ramp", &desc, &ramp_tex));

  DtexGradQuery q[2];
  q[0].texture = checker; q[0].s = 0.3f; q[0].t = 0.7f;
  q[0].dsdx = 1.0f / 1024; q[0].dtdx = 0; q[0].dsdy = 0; q[0].dtdy = 1.0f / 1024;
  q[1] = q[0];
  q[1].texture = ramp_tex; q[1].s = 100.5f / 256; q[1].t = 0.5f;
  DtexSample out[2];
  int converged = 0;
  for (int pass = 0; pass < 20 && !converged; pass++) {
    DtexLaunch launch;
    CHECK(dtex_launch_prepare(loader, &launch));
    size_t resident = 0;
    CHECK(dtex_launch_tex2d_grad_batch(launch, q, 2, NULL, out, &resident));
    if (resident == 2) {
      converged = 1;
      CHECK(dtex_launch_discard(launch));
      break;
    }
    DtexTicket ticket;
    CHECK(dtex_process_requests(launch, &ticket));
    CHECK(dtex_ticket_wait(ticket, DTEX_WAIT_FOREVER));
    CHECK(dtex_ticket_destroy(ticket));
  }
  EXPECT(converged);
  EXPECT(out[1].value[0] == 100.0f / 256.0f && out[1].value[3] == 1.0f);
  EXPECT(out[0].value[3] == 1.0f);

  DtexStats stats;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  CHECK(dtex_loader_get_stats(loader, &stats));
  EXPECT(stats.textures == 2 && stats.deferred_not_yet > 0);

  EXPECT(ramp.opened == 1 && ramp.closed == 0);
  CHECK(dtex_loader_destroy(loader));
  EXPECT(ramp.closed == 1);
  EXPECT(dtex_loader_destroy(loader) == DTEX_STATUS_INVALID_HANDLE);
  EXPECT(strlen(dtex_last_error_message()) > 0);
  printf("ok\n");
  return 0;
}
