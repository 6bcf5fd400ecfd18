/*
 * The Ptex part of the C11 consumer (main.c calls test_ptex): a Ptex fixture sampled through
 * the installed library, multi-pass and blocking, against the reference library's values.
 */
#include <demandtex.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void test_ptex(void);

static void check_(int ok, int line, const char *fmt, ...) {
  if (ok) {
    return;
  }
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "c-consumer: FAIL (ptex.c:%d): ", line);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, "\n");
  va_end(args);
  exit(1);
}

/* CHECK(condition, printf format, args...) */
#define CHECK(cond, ...) check_((cond) ? 1 : 0, __LINE__, __VA_ARGS__)
/* EXPECT_STATUS(call, status): the call returns exactly this status. */
#define EXPECT_STATUS(call, status)                                                         \
  do {                                                                                      \
    DtexStatus s_ = (call);                                                                 \
    CHECK(s_ == (status), "%s returned %s, expected %s: %s", #call, dtex_status_string(s_), \
          dtex_status_string(status), dtex_last_error_message());                          \
  } while (0)
/* EXPECT_OK(call): the call must return DTEX_STATUS_OK. */
#define EXPECT_OK(call) EXPECT_STATUS(call, DTEX_STATUS_OK)

enum { MAX_LAUNCHES = 8 };

static int near(float a, float b, float tolerance) { return fabsf(a - b) <= tolerance; }

static DtexLoader create_loader(void) {
  DtexLoaderOptions options;
  dtex_loader_options_default(&options);
  options.max_texture_memory = 64u << 20;
  DtexLoader loader;
  EXPECT_OK(dtex_loader_create(&options, &loader));
  return loader;
}

/* ---- Ptex -------------------------------------------------------------------------------- */

/* The fixture directory: set by CMakeLists.txt / test-consumers.sh, or by the environment. */
#ifndef DTEX_PTEX_FIXTURES
#define DTEX_PTEX_FIXTURES "tests/fixtures/ptex"
#endif

/* quad_uint8_rgb.ptx (10 faces, u8 RGB) through the Ptex C ABI: the first launch gives each
 * face's constant colour, not resident; the converged launch and the blocking cache give the
 * reference library's PtexFilter results (the fixture's JSON) within 1e-5, and agree bit for
 * bit; bad ids, faces and enums give their statuses. */
void test_ptex(void) {
  const char *dir = getenv("DEMANDTEX_PTEX_FIXTURES");
  char path[1024];
  snprintf(path, sizeof path, "%s/quad_uint8_rgb.ptx", dir ? dir : DTEX_PTEX_FIXTURES);
  struct {
    uint32_t face, filter;
    float want[3], constant[3];
  } cases[] = {
      {0, DTEX_PTEX_FILTER_POINT, {0.623529434f, 0.898039281f, 0.145098045f}, {143, 118, 106}},
      {0, DTEX_PTEX_FILTER_BILINEAR, {0.599107504f, 0.526257336f, 0.435640872f}, {143, 118, 106}},
      {0, DTEX_PTEX_FILTER_BOX, {0.577775717f, 0.527493954f, 0.442579687f}, {143, 118, 106}},
      {2, DTEX_PTEX_FILTER_POINT, {0.635294139f, 0.874509871f, 0.129411772f}, {125, 170, 127}},
      {2, DTEX_PTEX_FILTER_BILINEAR, {0.627833784f, 0.86970675f, 0.128592938f}, {125, 170, 127}},
      {2, DTEX_PTEX_FILTER_BOX, {0.627737343f, 0.873529434f, 0.128600001f}, {125, 170, 127}},
  };
  enum { N = sizeof cases / sizeof cases[0] };
  const float u = 0.129999995f, v = 0.769999981f, dudx = 0.0799999982f, dvdy = 0.0500000007f;
  DtexLoader loader = create_loader();
  uint32_t tex = DTEX_NO_TEXTURE;
  EXPECT_OK(dtex_ptex_create(loader, path, &tex));
  DtexPtexInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_OK(dtex_ptex_get_info(loader, tex, &info));
  CHECK(info.num_faces == 10 && info.num_channels == 3 && info.mesh_type == DTEX_PTEX_MESH_QUAD &&
            info.data_type == DTEX_TEXEL_U8 && info.alpha_channel == -1,
        "quad_uint8_rgb: %u faces, %u channels", (unsigned)info.num_faces,
        (unsigned)info.num_channels);
  DtexPtexFaceInfo face;
  memset(&face, 0, sizeof face);
  face.struct_size = sizeof face;
  EXPECT_OK(dtex_ptex_get_face_info(loader, tex, 0, &face));
  CHECK(face.ulog2 == 9 && face.vlog2 == 8, "face 0 is %ux%u (log2)", (unsigned)face.ulog2,
        (unsigned)face.vlog2);

  float multi[N][3];
  int launches = 0, all = 0;
  while (!all) {
    CHECK(++launches <= MAX_LAUNCHES, "Ptex lookups not resident after %d launches", MAX_LAUNCHES);
    DtexLaunch launch;
    EXPECT_OK(dtex_launch_prepare(loader, &launch));
    all = 1;
    for (int i = 0; i < N; i++) {
      DtexPtexFilterOptions o;
      dtex_ptex_filter_options_default(&o);
      o.filter = cases[i].filter;
      DtexPtexSampled r;
      EXPECT_OK(dtex_launch_ptex_sample(launch, tex, cases[i].face, u, v, dudx, 0, 0, dvdy, &o,
                                        multi[i], 3, &r));
      CHECK(r.channels == 3, "case %d: %u channels", i, (unsigned)r.channels);
      if (launches == 1) {
        CHECK(r.resident == 0, "case %d resident at the first launch", i);
        for (int c = 0; c < 3; c++) {
          CHECK(multi[i][c] == cases[i].constant[c] * (1.0f / 255.0f),
                "case %d channel %d: %g, not the face's constant colour", i, c, multi[i][c]);
        }
      }
      all &= (int)r.resident;
    }
    if (launches == 1) {
      float out[3];
      EXPECT_STATUS(dtex_launch_ptex_sample(launch, tex, 10, u, v, 0, 0, 0, 0, NULL, out, 3, NULL),
                    DTEX_STATUS_INVALID_ARGUMENT);
      EXPECT_STATUS(dtex_launch_ptex_sample(launch, tex + 1, 0, u, v, 0, 0, 0, 0, NULL, out, 3, NULL),
                    DTEX_STATUS_UNKNOWN_TEXTURE);
      DtexPtexFilterOptions bad;
      dtex_ptex_filter_options_default(&bad);
      bad.filter = 42;
      EXPECT_STATUS(dtex_launch_ptex_sample(launch, tex, 0, u, v, 0, 0, 0, 0, &bad, out, 3, NULL),
                    DTEX_STATUS_INVALID_ARGUMENT);
    }
    if (all) {
      EXPECT_OK(dtex_launch_discard(launch));
    } else {
      DtexTicket ticket;
      EXPECT_OK(dtex_process_requests(launch, &ticket));
      EXPECT_OK(dtex_ticket_wait(ticket, DTEX_WAIT_FOREVER));
      EXPECT_OK(dtex_ticket_destroy(ticket));
    }
  }
  for (int i = 0; i < N; i++) {
    for (int c = 0; c < 3; c++) {
      CHECK(near(multi[i][c], cases[i].want[c], 1e-5f), "case %d channel %d: %.9g, reference %.9g",
            i, c, multi[i][c], cases[i].want[c]);
    }
  }
  EXPECT_OK(dtex_loader_destroy(loader));
  EXPECT_STATUS(dtex_ptex_create(loader, path, &tex), DTEX_STATUS_INVALID_HANDLE);

  DtexLoaderOptions options;
  dtex_loader_options_default(&options);
  options.max_texture_memory = 4u * DTEX_TILE_BYTES;
  DtexCache cache;
  EXPECT_OK(dtex_cache_create(&options, &cache));
  EXPECT_OK(dtex_cache_ptex_create(cache, path, &tex));
  for (int i = 0; i < N; i++) {
    DtexPtexFilterOptions o;
    dtex_ptex_filter_options_default(&o);
    o.filter = cases[i].filter;
    float out[3];
    DtexPtexSampled r;
    EXPECT_OK(dtex_cache_ptex_sample(cache, tex, cases[i].face, u, v, dudx, 0, 0, dvdy, &o, out, 3, &r));
    CHECK(r.resident == 1 && memcmp(out, multi[i], sizeof out) == 0,
          "case %d: the blocking lookup differs from the multi-pass one", i);
  }
  EXPECT_STATUS(dtex_cache_ptex_create(cache, "/nonexistent.ptx", &tex), DTEX_STATUS_IO_ERROR);
  EXPECT_OK(dtex_cache_destroy(cache));
  printf("  Ptex: point, bilinear, box on quad_uint8_rgb.ptx match PtexFilter (%d launches)\n",
         launches);
}
