/* A C11 consumer of the Ptex C ABI, compiled and run by the unit test
 * `tests::ptex_c::c_program_samples_ptex_as_core_does` against the freshly built
 * libdemandtex.so:
 *
 *   ptex FILE.ptx LOOKUPS.txt
 *
 * LOOKUPS.txt holds one lookup a line: face u v dudx dvdx dudy dvdy filter lerp
 * jitter_u jitter_v. The program samples every lookup multi-pass (launch after launch
 * until all are resident; the first launch must find none resident and give the face's
 * constant colour) and blocking (a cache of 12 pages), checks that both agree, and prints
 * the values of each lookup on one line ("%.9g", which round-trips a float), for the test
 * to compare with core's resident ptex_sample. It also checks the error statuses of bad
 * handles, ids, faces and enums. Exits 0 on success. */
#include "demandtex.h"

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

#define MAX_LOOKUPS 1024
#define MAX_CHANNELS 8

typedef struct Lookup {
  uint32_t face;
  float u, v, d[4];
  DtexPtexFilterOptions options;
} Lookup;

static Lookup lookups[MAX_LOOKUPS];
static float multi[MAX_LOOKUPS][MAX_CHANNELS], blocking[MAX_LOOKUPS][MAX_CHANNELS];
static uint32_t written[MAX_LOOKUPS];

static size_t read_lookups(const char *path) {
  FILE *f = fopen(path, "r");
  EXPECT(f != NULL);
  size_t n = 0;
  Lookup l;
  unsigned face, filter, lerp;
  while (n < MAX_LOOKUPS &&
         fscanf(f, "%u %f %f %f %f %f %f %u %u %f %f", &face, &l.u, &l.v, &l.d[0], &l.d[1],
                &l.d[2], &l.d[3], &filter, &lerp, &l.options.jitter_u,
                &l.options.jitter_v) == 11) {
    float ju = l.options.jitter_u, jv = l.options.jitter_v;
    dtex_ptex_filter_options_default(&l.options);
    l.face = face;
    l.options.filter = filter;
    l.options.lerp = lerp;
    l.options.sharpness = 0.5f;
    l.options.jitter_u = ju;
    l.options.jitter_v = jv;
    lookups[n++] = l;
  }
  fclose(f);
  return n;
}

static void check_errors(DtexLoader loader, DtexLaunch launch, uint32_t tex, uint32_t faces) {
  float out[MAX_CHANNELS];
  DtexPtexFilterOptions o;
  dtex_ptex_filter_options_default(&o);
  DtexLaunch null_launch = {0};
  EXPECT(dtex_launch_ptex_sample(null_launch, tex, 0, 0.5f, 0.5f, 0, 0, 0, 0, &o, out,
                                 MAX_CHANNELS, NULL) == DTEX_STATUS_INVALID_HANDLE);
  EXPECT(dtex_launch_ptex_sample(launch, tex + 1000, 0, 0.5f, 0.5f, 0, 0, 0, 0, &o, out,
                                 MAX_CHANNELS, NULL) == DTEX_STATUS_UNKNOWN_TEXTURE);
  EXPECT(dtex_launch_ptex_sample(launch, tex, faces, 0.5f, 0.5f, 0, 0, 0, 0, &o, out,
                                 MAX_CHANNELS, NULL) == DTEX_STATUS_INVALID_ARGUMENT);
  EXPECT(strstr(dtex_last_error_message(), "face") != NULL);
  o.filter = 99;
  EXPECT(dtex_launch_ptex_sample(launch, tex, 0, 0.5f, 0.5f, 0, 0, 0, 0, &o, out,
                                 MAX_CHANNELS, NULL) == DTEX_STATUS_INVALID_ARGUMENT);
  EXPECT(strstr(dtex_last_error_message(), "filter") != NULL);
  uint32_t id = 0;
  EXPECT(dtex_ptex_create(loader, "/nonexistent/file.ptx", &id) == DTEX_STATUS_IO_ERROR);
  DtexPtexFaceInfo fi;
  memset(&fi, 0, sizeof fi);
  fi.struct_size = sizeof fi;
  EXPECT(dtex_ptex_get_face_info(loader, tex, faces, &fi) == DTEX_STATUS_INVALID_ARGUMENT);
  CHECK(dtex_ptex_get_face_info(loader, tex, faces - 1, &fi));
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FILE.ptx LOOKUPS.txt\n", argv[0]);
    return 2;
  }
  size_t n = read_lookups(argv[2]);
  EXPECT(n > 0);

  DtexLoaderOptions lo;
  dtex_loader_options_default(&lo);
  lo.max_texture_memory = 64u << 20;
  lo.fill_threads = 1;
  DtexLoader loader;
  CHECK(dtex_loader_create(&lo, &loader));
  uint32_t tex = DTEX_NO_TEXTURE;
  CHECK(dtex_ptex_create(loader, argv[1], &tex));
  DtexPtexInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK(dtex_ptex_get_info(loader, tex, &info));
  EXPECT(info.num_faces > 0 && info.num_channels > 0 && info.num_channels <= MAX_CHANNELS);
  EXPECT(info.num_pages > 0);

  /* Multi-pass: launch, sample, process, until every lookup is resident. */
  int launches = 0, done = 0;
  while (!done) {
    EXPECT(++launches <= 20);
    DtexLaunch launch;
    CHECK(dtex_launch_prepare(loader, &launch));
    if (launches == 1) check_errors(loader, launch, tex, info.num_faces);
    done = 1;
    for (size_t i = 0; i < n; i++) {
      const Lookup *l = &lookups[i];
      DtexPtexSampled r;
      CHECK(dtex_launch_ptex_sample(launch, tex, l->face, l->u, l->v, l->d[0], l->d[1], l->d[2],
                                    l->d[3], &l->options, multi[i], MAX_CHANNELS, &r));
      EXPECT(r.channels <= info.num_channels);
      written[i] = r.channels;
      done &= (int)r.resident;
    }
    if (done) {
      CHECK(dtex_launch_discard(launch));
    } else {
      DtexTicket ticket;
      CHECK(dtex_process_requests(launch, &ticket));
      CHECK(dtex_ticket_wait(ticket, DTEX_WAIT_FOREVER));
      CHECK(dtex_ticket_destroy(ticket));
    }
  }
  EXPECT(launches >= 2); /* nothing is resident at the first launch */
  CHECK(dtex_loader_destroy(loader));

  /* Blocking, on a cache of 12 pages (pages are evicted and read again). */
  lo.max_texture_memory = 12u * DTEX_TILE_BYTES;
  DtexCache cache;
  CHECK(dtex_cache_create(&lo, &cache));
  CHECK(dtex_cache_ptex_create(cache, argv[1], &tex));
  for (size_t i = 0; i < n; i++) {
    const Lookup *l = &lookups[i];
    DtexPtexSampled r;
    CHECK(dtex_cache_ptex_sample(cache, tex, l->face, l->u, l->v, l->d[0], l->d[1], l->d[2],
                                 l->d[3], &l->options, blocking[i], MAX_CHANNELS, &r));
    EXPECT(r.resident == 1 && r.channels == written[i]);
    EXPECT(memcmp(blocking[i], multi[i], sizeof multi[i]) == 0);
  }
  CHECK(dtex_cache_destroy(cache));

  for (size_t i = 0; i < n; i++) {
    for (uint32_t c = 0; c < written[i]; c++) printf("%s%.9g", c ? " " : "", (double)multi[i][c]);
    printf("\n");
  }
  return 0;
}
