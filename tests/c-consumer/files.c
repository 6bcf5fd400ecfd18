/*
 * The texture-file part of the C11 consumer (main.c calls test_files): files other tools
 * wrote, through the installed library's blocking cache, against their reference decodes.
 *   - dtx-bc7.dds (a BC7 DDS) against Pillow's decode of level 0, texel for texel;
 *   - rgb8_zip.tx (OIIO maketx: 64x64 tiles, so the cache fills its 128x128 pages file tile
 *     by file tile, in place) against OIIO's decode of every level;
 *   - derivative lookups on rgb8_zip.tx: on a texel centre, the slopes to the next texels.
 */
#include <demandtex.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void test_files(void);

#ifndef DTEX_FIXTURES
#define DTEX_FIXTURES "tests/fixtures"
#endif

static void check_(int ok, int line, const char *fmt, ...) {
  if (ok) {
    return;
  }
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "c-consumer: FAIL (files.c:%d): ", line);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, "\n");
  va_end(args);
  exit(1);
}

#define CHECK(cond, ...) check_((cond) ? 1 : 0, __LINE__, __VA_ARGS__)
#define EXPECT_OK(call)                                                                     \
  do {                                                                                      \
    DtexStatus s_ = (call);                                                                 \
    CHECK(s_ == DTEX_STATUS_OK, "%s returned %s: %s", #call, dtex_status_string(s_),         \
          dtex_last_error_message());                                                       \
  } while (0)

static void fixture(char *path, size_t size, const char *name) {
  const char *dir = getenv("DEMANDTEX_FIXTURES");
  snprintf(path, size, "%s/%s", dir ? dir : DTEX_FIXTURES, name);
}

/* Sample texel (x, y) of level `level` of a `w x h` texture at its centre, blocking. */
static DtexSample texel(DtexCache cache, uint32_t tex, int level, int x, int y, int w, int h) {
  int lw = w >> level, lh = h >> level;
  lw = lw < 1 ? 1 : lw;
  lh = lh < 1 ? 1 : lh;
  /* A footprint of one texel of this level (point filtering picks the level exactly). */
  float d = ldexpf(1.0f, level) / (float)w * 0.999f;
  DtexSample out;
  memset(&out, 0, sizeof out);
  EXPECT_OK(dtex_cache_tex2d_grad(cache, tex, ((float)x + 0.5f) / (float)lw,
                                  ((float)y + 0.5f) / (float)lh, d, 0.0f, 0.0f,
                                  d * (float)w / (float)h, NULL, &out));
  return out;
}

static DtexCache create_cache_pages(uint64_t budget, uint32_t full_pages) {
  DtexLoaderOptions options;
  dtex_loader_options_default(&options);
  options.max_texture_memory = budget;
  options.full_pages = full_pages;
  DtexCache cache;
  EXPECT_OK(dtex_cache_create(&options, &cache));
  return cache;
}

static DtexCache create_cache(uint64_t budget) { return create_cache_pages(budget, 0); }

static DtexTextureDesc point_desc(void) {
  DtexTextureDesc desc;
  dtex_texture_desc_default(&desc);
  desc.filter = DTEX_FILTER_POINT;
  desc.mip_filter = DTEX_FILTER_POINT;
  return desc;
}

static void test_dds(void) {
  char path[1024], ref[1024];
  fixture(path, sizeof path, "dds/dtx-bc7.dds");
  fixture(ref, sizeof ref, "dds/dtx-bc7.ref");
  DtexCache cache = create_cache(8u << 20);
  DtexTextureDesc desc = point_desc();
  uint32_t tex = DTEX_NO_TEXTURE;
  EXPECT_OK(dtex_cache_texture_for_path(cache, path, &desc, &tex));
  FILE *f = fopen(ref, "r");
  CHECK(f != NULL, "cannot open %s", ref);
  int n = 0;
  unsigned r, g, b, a;
  while (fscanf(f, "%u %u %u %u", &r, &g, &b, &a) == 4) {
    DtexSample s = texel(cache, tex, 0, n % 37, n / 37, 37, 22);
    float want[4] = {r / 255.0f, g / 255.0f, b / 255.0f, a / 255.0f};
    CHECK(s.resident, "dds texel %d not resident", n);
    for (int c = 0; c < 4; c++) {
      CHECK(fabsf(s.value[c] - want[c]) < 1e-6f, "dds texel %d channel %d: %g, Pillow %g", n, c,
            s.value[c], want[c]);
    }
    n++;
  }
  fclose(f);
  CHECK(n == 37 * 22, "dtx-bc7.ref: %d texels", n);
  EXPECT_OK(dtex_cache_destroy(cache));
}

/* maketx's 64x64 tiles against OIIO's decode, in a budget of a few pages: by default the
 * pages are the file's tiles (16 KiB); with full_pages, 64 KiB pages are filled file tile by
 * file tile. Both evict. */
static void test_tx_pages(uint32_t full_pages) {
  char path[1024], ref[1024];
  fixture(path, sizeof path, "tx/rgb8_zip.tx");
  fixture(ref, sizeof ref, "tx/rgb8_zip.ref");
  DtexCache cache = create_cache_pages(6u << 16, full_pages);
  DtexTextureDesc desc = point_desc();
  uint32_t tex = DTEX_NO_TEXTURE;
  EXPECT_OK(dtex_cache_texture_for_path(cache, path, &desc, &tex));
  FILE *f = fopen(ref, "r");
  CHECK(f != NULL, "cannot open %s", ref);
  int n = 0, level, x, y;
  float want[3];
  while (fscanf(f, "%d %d %d %f %f %f", &level, &x, &y, &want[0], &want[1], &want[2]) == 6) {
    DtexSample s = texel(cache, tex, level, x, y, 200, 136);
    CHECK(s.resident, "tx level %d (%d, %d) not resident", level, x, y);
    for (int c = 0; c < 3; c++) {
      CHECK(fabsf(s.value[c] - want[c]) < 1e-6f, "tx level %d (%d, %d) channel %d: %g, OIIO %g",
            level, x, y, c, s.value[c], want[c]);
    }
    n++;
  }
  fclose(f);
  CHECK(n > 100, "rgb8_zip.ref: %d texels", n);
  DtexStats stats;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  EXPECT_OK(dtex_cache_get_stats(cache, &stats));
  if (full_pages) {
    CHECK(stats.tiles_published_unread > 0 && stats.file_tiles_filled > 0,
          "pages filled file tile by file tile: %llu unread, %llu file tiles",
          (unsigned long long)stats.tiles_published_unread,
          (unsigned long long)stats.file_tiles_filled);
  } else {
    CHECK(stats.tiles_filled > 0 && stats.tiles_published_unread == 0 &&
              stats.file_tiles_filled == 0 && stats.host_tile_bytes % 16384u == 0,
          "pages of the file's tiles: %llu filled, %llu unread, %llu host bytes",
          (unsigned long long)stats.tiles_filled,
          (unsigned long long)stats.tiles_published_unread,
          (unsigned long long)stats.host_tile_bytes);
  }
  EXPECT_OK(dtex_cache_destroy(cache));
}

/* Bilinear lookups with derivatives: on the centre of texel (x, y) of level 0 the value is
 * the texel, d/ds is width x (texel (x+1, y) - texel (x, y)) and d/dt height x (texel
 * (x, y+1) - texel (x, y)); the value equals dtex_cache_tex2d_grad's. */
static void test_derivatives(void) {
  char path[1024];
  fixture(path, sizeof path, "tx/rgb8_zip.tx");
  DtexCache cache = create_cache(16u << 20);
  DtexTextureDesc desc;
  dtex_texture_desc_default(&desc);
  uint32_t tex = DTEX_NO_TEXTURE;
  EXPECT_OK(dtex_cache_texture_for_path(cache, path, &desc, &tex));
  const int w = 200, h = 136;
  const float g = 0.25f / (float)w;
  for (int k = 0; k < 12; k++) {
    int x = (k * 37 + 5) % (w - 1), y = (k * 23 + 3) % (h - 1);
    float s = ((float)x + 0.5f) / (float)w, t = ((float)y + 0.5f) / (float)h;
    DtexSampleDerivatives d;
    memset(&d, 0, sizeof d);
    EXPECT_OK(dtex_cache_tex2d_grad_derivatives(cache, tex, s, t, g, 0.0f, 0.0f, g, NULL, &d));
    DtexSample here, right, below;
    EXPECT_OK(dtex_cache_tex2d_grad(cache, tex, s, t, g, 0.0f, 0.0f, g, NULL, &here));
    EXPECT_OK(dtex_cache_tex2d_grad(cache, tex, s + 1.0f / (float)w, t, g, 0.0f, 0.0f, g, NULL,
                                    &right));
    EXPECT_OK(dtex_cache_tex2d_grad(cache, tex, s, t + 1.0f / (float)h, g, 0.0f, 0.0f, g, NULL,
                                    &below));
    CHECK(d.sample.resident && memcmp(d.sample.value, here.value, sizeof here.value) == 0,
          "derivative lookup at texel (%d, %d): value differs from dtex_cache_tex2d_grad", x, y);
    for (int c = 0; c < 4; c++) {
      float ds = (float)w * (right.value[c] - here.value[c]);
      float dt = (float)h * (below.value[c] - here.value[c]);
      CHECK(fabsf(d.ds[c] - ds) < 1e-3f && fabsf(d.dt[c] - dt) < 1e-3f,
            "texel (%d, %d) channel %d: d/ds %g (want %g), d/dt %g (want %g)", x, y, c, d.ds[c],
            ds, d.dt[c], dt);
    }
  }
  EXPECT_OK(dtex_cache_destroy(cache));
}

void test_files(void) {
  test_dds();
  test_derivatives();
  test_tx_pages(0);
  test_tx_pages(1);
}
