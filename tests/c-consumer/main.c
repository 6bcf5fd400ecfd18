/*
 * A C11 consumer of the installed demandtex package: the multi-pass loop on a procedural
 * texture and on a texture whose texels a C callback source generates, checked texel by
 * texel against the same formulas computed here, plus statistics, the error model, the
 * callback lifecycle, UDIM pattern expansion, Ptex lookups (multi-pass and blocking, against
 * the reference library's values) and the version macros.
 *
 * Built by scripts/test-consumers.sh through find_package(DemandTex) (shared and static)
 * and through pkg-config, and run under valgrind. Exits 0 when every check passes; on the
 * first failure it prints what failed and exits 1.
 */
/* mkdtemp and rmdir (POSIX), for the UDIM pattern test's files. */
#define _POSIX_C_SOURCE 200809L

#include <demandtex.h>

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- checks ---------------------------------------------------------------------------- */

static void check_(int ok, int line, const char *fmt, ...) {
  if (ok) {
    return;
  }
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "c-consumer: FAIL (main.c:%d): ", line);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, "\n");
  va_end(args);
  exit(1);
}

/* CHECK(condition, printf format, args...) */
#define CHECK(cond, ...) check_((cond) ? 1 : 0, __LINE__, __VA_ARGS__)

static void expect_status_(DtexStatus got, DtexStatus want, const char *call, int line) {
  if (got == want) {
    return;
  }
  fprintf(stderr, "c-consumer: FAIL (main.c:%d): %s returned %s, expected %s: %s\n", line, call,
          dtex_status_string(got), dtex_status_string(want), dtex_last_error_message());
  exit(1);
}

/* EXPECT_OK(call): the call must return DTEX_STATUS_OK. */
#define EXPECT_OK(call) expect_status_((call), DTEX_STATUS_OK, #call, __LINE__)
/* EXPECT_STATUS(call, status): the call must fail with exactly this status, with a message. */
#define EXPECT_STATUS(call, status)                                                         \
  do {                                                                                      \
    expect_status_((call), (status), #call, __LINE__);                                      \
    CHECK(dtex_last_error_message() != NULL && dtex_last_error_message()[0] != '\0',        \
          "%s failed without a dtex_last_error_message()", #call);                         \
  } while (0)

static int near(float a, float b, float tolerance) { return fabsf(a - b) <= tolerance; }

/* ---- the loader ------------------------------------------------------------------------ */

enum { BUDGET_BYTES = 64u << 20, MAX_LAUNCHES = 8 };

/* A CPU loader with small bookkeeping; `coalesce`: constant tiles share one slot per value. */
static DtexLoader create_loader_coalescing(uint32_t coalesce) {
  DtexLoaderOptions options;
  dtex_loader_options_default(&options);
  CHECK(options.struct_size == sizeof options, "options.struct_size %u, sizeof %zu",
        (unsigned)options.struct_size, sizeof options);
  CHECK(options.coalesce_constant_tiles == 1, "coalescing is on by default");
  CHECK(options.share_duplicate_textures == 1 && options.full_pages == 0,
        "duplicate sharing is on by default");
  CHECK(options.fill_cpu_cores == 0.0f && options.decode_blocks == 0, "fills are not CPU-limited by default");
  options.coalesce_constant_tiles = coalesce;
  /* Small bookkeeping keeps the run fast under valgrind. */
  options.num_pages = 1u << 20;
  options.page_table_entries = 1u << 12;
  options.max_textures = 64;
  options.max_texture_memory = BUDGET_BYTES;
  options.fill_threads = 2;
  DtexLoader loader = {0};
  EXPECT_OK(dtex_loader_create(&options, &loader));
  CHECK(loader.id != 0, "dtex_loader_create gave the null handle");
  return loader;
}

static DtexLoader create_loader(void) { return create_loader_coalescing(1); }

static DtexTextureDesc point_sampled(void) {
  DtexTextureDesc desc;
  dtex_texture_desc_default(&desc);
  desc.filter = DTEX_FILTER_POINT;
  desc.mip_filter = DTEX_FILTER_POINT;
  desc.address_s = DTEX_ADDRESS_CLAMP;
  desc.address_t = DTEX_ADDRESS_CLAMP;
  return desc;
}

/* One pass of lookups on a launch: counts the resident ones and checks their values. */
typedef void (*PassFn)(DtexLaunch launch, const void *ctx, size_t *resident, size_t *total);

/* The multi-pass loop: prepare a launch, sample, and if anything was missing, process the
 * launch's requests, wait for the fills and go again. Returns the launches it took. */
static int run_until_resident(DtexLoader loader, PassFn pass, const void *ctx, const char *what) {
  for (int n = 1; n <= MAX_LAUNCHES; n++) {
    DtexLaunch launch = {0};
    EXPECT_OK(dtex_launch_prepare(loader, &launch));
    size_t resident = 0, total = 0;
    pass(launch, ctx, &resident, &total);
    printf("  %s: launch %d: %zu of %zu lookups resident\n", what, n, resident, total);
    if (resident == total) {
      EXPECT_OK(dtex_launch_discard(launch));
      return n;
    }
    DtexTicket ticket = {0};
    EXPECT_OK(dtex_process_requests(launch, &ticket));
    EXPECT_STATUS(dtex_launch_discard(launch), DTEX_STATUS_INVALID_HANDLE); /* consumed */
    EXPECT_OK(dtex_ticket_wait(ticket, DTEX_WAIT_FOREVER));
    uint32_t done = 0;
    uint64_t remaining = 1, tasks = 0;
    EXPECT_OK(dtex_ticket_poll(ticket, &done, &remaining, &tasks));
    CHECK(done == 1 && remaining == 0, "ticket waited for but done %u, %llu of %llu tasks left",
          (unsigned)done, (unsigned long long)remaining, (unsigned long long)tasks);
    EXPECT_OK(dtex_ticket_destroy(ticket));
  }
  CHECK(0, "%s: not resident after %d launches", what, MAX_LAUNCHES);
  return 0;
}

/* ---- a procedural checkerboard ------------------------------------------------------------ */

/* Core's LEVEL_COLORS and CHECKER_DARK (core/src/sources/procedural/checkerboard.rs). */
static const float LEVEL_COLORS[17][3] = {
    {0.90f, 0.10f, 0.10f}, {0.95f, 0.50f, 0.05f}, {0.95f, 0.90f, 0.10f}, {0.55f, 0.90f, 0.10f},
    {0.10f, 0.70f, 0.20f}, {0.10f, 0.90f, 0.60f}, {0.10f, 0.85f, 0.95f}, {0.15f, 0.45f, 0.95f},
    {0.20f, 0.15f, 0.85f}, {0.55f, 0.15f, 0.90f}, {0.90f, 0.15f, 0.85f}, {0.95f, 0.45f, 0.65f},
    {0.97f, 0.97f, 0.97f}, {0.50f, 0.50f, 0.50f}, {0.55f, 0.30f, 0.10f}, {0.50f, 0.55f, 0.05f},
    {0.05f, 0.40f, 0.45f},
};
static const float CHECKER_DARK = 0.4f;

typedef struct Checker {
  uint32_t texture, size, square;
} Checker;

/* The colour of texel (x, y) of `level`, as 8-bit unorm values read back as floats. */
static void checker_texel(const Checker *c, uint32_t level, uint32_t x, uint32_t y, float out[4]) {
  uint32_t square = c->square >> level;
  if (square == 0) {
    square = 1;
  }
  float k = (((x / square) ^ (y / square)) & 1u) == 0 ? 1.0f : CHECKER_DARK;
  for (int i = 0; i < 3; i++) {
    out[i] = roundf(LEVEL_COLORS[level % 17][i] * k * 255.0f) / 255.0f;
  }
  out[3] = 1.0f;
}

static void checker_pass(DtexLaunch launch, const void *ctx, size_t *resident, size_t *total) {
  const Checker *c = ctx;
  const uint32_t levels[] = {0, 3};
  for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
    uint32_t level = levels[l], size = c->size >> level;
    for (uint32_t j = 0; j < 12; j++) {
      for (uint32_t i = 0; i < 12; i++) {
        uint32_t x = (i * 97u + 5u) % size, y = (j * 61u + 11u) % size;
        float s = ((float)x + 0.5f) / (float)size, t = ((float)y + 0.5f) / (float)size;
        DtexSample sample;
        EXPECT_OK(dtex_launch_tex2d_lod(launch, c->texture, s, t, (float)level, NULL, &sample));
        *total += 1;
        if (!sample.resident) {
          continue;
        }
        *resident += 1;
        float want[4];
        checker_texel(c, level, x, y, want);
        for (int k = 0; k < 4; k++) {
          CHECK(near(sample.value[k], want[k], 0.6f / 255.0f),
                "checkerboard level %u texel (%u, %u) channel %d: sampled %f, expected %f",
                (unsigned)level, (unsigned)x, (unsigned)y, k, sample.value[k], want[k]);
        }
      }
    }
  }
}

/* A 2048² RGBA8 procedural checkerboard of `square`-texel squares, point sampled. */
static Checker create_checker(DtexLoader loader, uint32_t square) {
  DtexProceduralDesc proc;
  dtex_procedural_desc_default(&proc);
  proc.kind = DTEX_PROCEDURAL_CHECKERBOARD;
  proc.width = proc.height = 2048;
  proc.texel_type = DTEX_TEXEL_U8;
  proc.channels = 4;
  proc.param = square;
  DtexTextureDesc desc = point_sampled();
  Checker c = {DTEX_NO_TEXTURE, 2048, square};
  EXPECT_OK(dtex_texture_create_procedural(loader, &proc, &desc, &c.texture));
  CHECK(c.texture != DTEX_NO_TEXTURE, "procedural texture got DTEX_NO_TEXTURE");
  return c;
}

static int test_procedural(DtexLoader loader) {
  Checker c = create_checker(loader, 16);
  return run_until_resident(loader, checker_pass, &c, "checkerboard");
}

/* A checkerboard of 1024-texel squares: every tile of levels 0 and 3 is one colour, so
   tiles share one slot per colour (constant-tile coalescing), and lookups are unchanged. */
static void test_constant_tiles(int coalesce) {
  DtexLoader loader = create_loader_coalescing((uint32_t)coalesce);
  Checker c = create_checker(loader, 1024);
  run_until_resident(loader, checker_pass, &c, "constant checkerboard");
  DtexStats stats;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  EXPECT_OK(dtex_loader_get_stats(loader, &stats));
  printf("  constant tiles (coalescing %s): %llu filled, %llu on %llu shared slots\n",
         coalesce ? "on" : "off", (unsigned long long)stats.tiles_filled,
         (unsigned long long)stats.coalesced_pages,
         (unsigned long long)stats.shared_constant_tiles);
  if (!coalesce) {
    CHECK(stats.tiles_filled > 0 && stats.tiles_coalesced == 0 && stats.shared_constant_tiles == 0,
          "coalescing off: %llu coalesced", (unsigned long long)stats.tiles_coalesced);
    EXPECT_OK(dtex_loader_destroy(loader));
    return;
  }
  CHECK(stats.tiles_coalesced == stats.tiles_filled && stats.coalesced_pages == stats.tiles_filled,
        "every tile is constant: %llu filled, %llu coalesced, %llu pages",
        (unsigned long long)stats.tiles_filled, (unsigned long long)stats.tiles_coalesced,
        (unsigned long long)stats.coalesced_pages);
  /* Two colours at each of the two levels sampled. */
  CHECK(stats.shared_constant_tiles == 4, "shared slots: %llu",
        (unsigned long long)stats.shared_constant_tiles);
  EXPECT_OK(dtex_loader_destroy(loader));
}

/* ---- a callback source generating texels in C -------------------------------------------- */

enum { GRAD_W = 256, GRAD_H = 128, GRAD_LEVELS = 9, TEXEL_BYTES = 16 };

typedef struct Gradient {
  atomic_int opens, reads, tail_reads, not_yet, closes;
  atomic_flag deferred; /* set once the first read has answered NOT_YET */
} Gradient;

static Gradient gradient = {0, 0, 0, 0, 0, ATOMIC_FLAG_INIT};

/* Texel (x, y) of `level`: x and y across the level, the level number in blue. */
static void gradient_texel(uint32_t level, uint32_t x, uint32_t y, float out[4]) {
  uint32_t w = GRAD_W >> level, h = GRAD_H >> level;
  w = w ? w : 1;
  h = h ? h : 1;
  out[0] = ((float)x + 0.5f) / (float)w;
  out[1] = ((float)y + 0.5f) / (float)h;
  out[2] = (float)level / 16.0f;
  out[3] = 1.0f;
}

static int32_t gradient_write(const DtexTileRegion *r, unsigned char *dest, size_t dest_bytes,
                              size_t row_bytes) {
  if (r->level >= GRAD_LEVELS || r->width == 0 || r->height == 0 ||
      row_bytes < (size_t)r->width * TEXEL_BYTES ||
      dest_bytes < (size_t)(r->height - 1) * row_bytes + (size_t)r->width * TEXEL_BYTES) {
    dtex_source_set_error("gradient: region does not fit the destination");
    return DTEX_SOURCE_ERROR;
  }
  for (uint32_t j = 0; j < r->height; j++) {
    float *row = (float *)(void *)(dest + (size_t)j * row_bytes);
    for (uint32_t i = 0; i < r->width; i++) {
      gradient_texel(r->level, r->x + i, r->y + j, row + 4 * (size_t)i);
    }
  }
  return DTEX_SOURCE_READY;
}

static int32_t gradient_open(void *user_data, DtexImageInfo *out_info) {
  Gradient *g = user_data;
  atomic_fetch_add(&g->opens, 1);
  out_info->width = GRAD_W;
  out_info->height = GRAD_H;
  out_info->texel_type = DTEX_TEXEL_F32;
  out_info->channels = 4;
  out_info->num_levels = GRAD_LEVELS;
  return DTEX_SOURCE_READY;
}

static int32_t gradient_read_region(void *user_data, const DtexTileRegion *region, void *dest,
                                    size_t dest_bytes, size_t row_bytes) {
  Gradient *g = user_data;
  if (!atomic_flag_test_and_set(&g->deferred)) {
    atomic_fetch_add(&g->not_yet, 1); /* the first read: come back at a later launch */
    return DTEX_SOURCE_NOT_YET;
  }
  atomic_fetch_add(&g->reads, 1);
  return gradient_write(region, dest, dest_bytes, row_bytes);
}

static int32_t gradient_read_mip_tail(void *user_data, const DtexMipTailLevel *levels,
                                      size_t num_levels, void *dest, size_t dest_bytes) {
  Gradient *g = user_data;
  atomic_fetch_add(&g->tail_reads, 1);
  for (size_t i = 0; i < num_levels; i++) {
    if (levels[i].offset > dest_bytes) {
      dtex_source_set_error("gradient: mip tail level outside the destination");
      return DTEX_SOURCE_ERROR;
    }
    int32_t r = gradient_write(&levels[i].region, (unsigned char *)dest + levels[i].offset,
                               dest_bytes - levels[i].offset, levels[i].row_bytes);
    if (r != DTEX_SOURCE_READY) {
      return r;
    }
  }
  return DTEX_SOURCE_READY;
}

static int32_t gradient_base_color(void *user_data, float out_rgba[4]) {
  (void)user_data;
  (void)out_rgba;
  return DTEX_SOURCE_NOT_YET; /* unknown: the loader uses the mip tail */
}

static void gradient_close(void *user_data) {
  Gradient *g = user_data;
  atomic_fetch_add(&g->closes, 1);
}

static DtexImageSourceCallbacks gradient_callbacks(void) {
  DtexImageSourceCallbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.user_data = &gradient;
  cb.open = gradient_open;
  cb.read_region = gradient_read_region;
  cb.read_mip_tail = gradient_read_mip_tail;
  cb.read_base_color = gradient_base_color;
  cb.close = gradient_close;
  return cb;
}

typedef struct Batch {
  DtexGradQuery queries[2 * 8 * 8];
  uint32_t level[2 * 8 * 8], x[2 * 8 * 8], y[2 * 8 * 8];
  size_t count;
} Batch;

static void gradient_pass(DtexLaunch launch, const void *ctx, size_t *resident, size_t *total) {
  const Batch *b = ctx;
  DtexSample samples[sizeof b->queries / sizeof b->queries[0]];
  size_t batch_resident = 0;
  EXPECT_OK(dtex_launch_tex2d_grad_batch(launch, b->queries, b->count, NULL, samples,
                                         &batch_resident));
  for (size_t q = 0; q < b->count; q++) {
    *total += 1;
    if (!samples[q].resident) {
      continue;
    }
    *resident += 1;
    float want[4];
    gradient_texel(b->level[q], b->x[q], b->y[q], want);
    for (int k = 0; k < 4; k++) {
      CHECK(near(samples[q].value[k], want[k], 1e-6f),
            "gradient level %u texel (%u, %u) channel %d: sampled %f, expected %f",
            (unsigned)b->level[q], (unsigned)b->x[q], (unsigned)b->y[q], k,
            samples[q].value[k], want[k]);
    }
  }
  CHECK(batch_resident == *resident, "batch reported %zu resident, samples say %zu",
        batch_resident, *resident);
}

static int test_callbacks(DtexLoader loader) {
  DtexTextureDesc desc = point_sampled();
  uint32_t texture = DTEX_NO_TEXTURE;

  /* A failed create leaves user_data with the caller: close is not called. */
  DtexImageSourceCallbacks bad = gradient_callbacks();
  bad.struct_size = 3;
  EXPECT_STATUS(dtex_texture_create_from_callbacks(loader, &bad, "bad", &desc, &texture),
                DTEX_STATUS_INVALID_ARGUMENT);
  CHECK(texture == DTEX_NO_TEXTURE, "a failed create wrote its out parameter");
  bad = gradient_callbacks();
  bad.read_region = NULL;
  EXPECT_STATUS(dtex_texture_create_from_callbacks(loader, &bad, "bad", &desc, &texture),
                DTEX_STATUS_INVALID_ARGUMENT);
  CHECK(atomic_load(&gradient.closes) == 0, "close called after a failed create");

  DtexImageSourceCallbacks cb = gradient_callbacks();
  EXPECT_OK(dtex_texture_create_from_callbacks(loader, &cb, "gradient", &desc, &texture));
  CHECK(texture != DTEX_NO_TEXTURE, "callback texture got DTEX_NO_TEXTURE");

  /* Level 0 (tiles, read_region) and level 3 (the mip tail), one lookup per texel footprint. */
  Batch b;
  memset(&b, 0, sizeof b);
  const uint32_t levels[] = {0, 3};
  for (size_t l = 0; l < 2; l++) {
    uint32_t w = GRAD_W >> levels[l], h = GRAD_H >> levels[l];
    for (uint32_t j = 0; j < 8; j++) {
      for (uint32_t i = 0; i < 8; i++) {
        size_t q = b.count++;
        b.level[q] = levels[l];
        b.x[q] = (i * 37u + 3u) % w;
        b.y[q] = (j * 29u + 1u) % h;
        DtexGradQuery query = {texture,
                               ((float)b.x[q] + 0.5f) / (float)w,
                               ((float)b.y[q] + 0.5f) / (float)h,
                               1.0f / (float)w,
                               0.0f,
                               0.0f,
                               1.0f / (float)h};
        b.queries[q] = query;
      }
    }
  }
  int launches = run_until_resident(loader, gradient_pass, &b, "callbacks");
  CHECK(launches >= 2, "the callback texture was resident before any fill");
  CHECK(atomic_load(&gradient.opens) == 1, "open called %d times", atomic_load(&gradient.opens));
  CHECK(atomic_load(&gradient.not_yet) == 1, "NOT_YET answered %d times",
        atomic_load(&gradient.not_yet));
  CHECK(atomic_load(&gradient.reads) > 0, "read_region never answered READY");
  CHECK(atomic_load(&gradient.tail_reads) == 1, "read_mip_tail called %d times",
        atomic_load(&gradient.tail_reads));
  CHECK(atomic_load(&gradient.closes) == 0, "close called while the texture is loaded");
  return launches;
}

/* ---- statistics, error model, version ---------------------------------------------------- */

static void test_stats(DtexLoader loader, int launches) {
  DtexStats stats;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  EXPECT_OK(dtex_loader_get_stats(loader, &stats));
  printf("  stats: %llu textures, %llu tiles filled, %llu mip tails, %llu deferred (not yet "
         "%llu), resident %llu of %llu bytes, %llu launches\n",
         (unsigned long long)stats.textures, (unsigned long long)stats.tiles_filled,
         (unsigned long long)stats.mip_tails_filled, (unsigned long long)stats.requests_deferred,
         (unsigned long long)stats.deferred_not_yet, (unsigned long long)stats.resident_bytes,
         (unsigned long long)stats.budget_bytes, (unsigned long long)stats.launches);
  CHECK(stats.textures == 2, "stats.textures %llu", (unsigned long long)stats.textures);
  CHECK(stats.failed_textures == 0, "stats.failed_textures %llu",
        (unsigned long long)stats.failed_textures);
  CHECK(stats.tiles_filled > 0, "no tiles filled");
  CHECK(stats.mip_tails_filled >= 1, "no mip tails filled");
  CHECK(stats.deferred_not_yet >= 1, "the NOT_YET read was not counted as deferred");
  CHECK(stats.budget_bytes == BUDGET_BYTES, "budget %llu", (unsigned long long)stats.budget_bytes);
  CHECK(stats.resident_bytes > 0 && stats.resident_bytes <= stats.budget_bytes,
        "resident %llu bytes, budget %llu", (unsigned long long)stats.resident_bytes,
        (unsigned long long)stats.budget_bytes);
  CHECK(stats.peak_resident_bytes >= stats.resident_bytes, "peak below resident");
  CHECK(stats.launches >= (uint64_t)launches, "stats.launches %llu < %d",
        (unsigned long long)stats.launches, launches);
  CHECK(stats.read_errors == 0, "read errors: %llu", (unsigned long long)stats.read_errors);

  EXPECT_OK(dtex_loader_set_max_texture_memory(loader, BUDGET_BYTES / 2));
  EXPECT_OK(dtex_loader_get_stats(loader, &stats));
  CHECK(stats.budget_bytes == BUDGET_BYTES / 2, "budget after set: %llu",
        (unsigned long long)stats.budget_bytes);
  CHECK(stats.resident_bytes <= stats.budget_bytes, "resident %llu over the shrunk budget",
        (unsigned long long)stats.resident_bytes);

  stats.struct_size = 4; /* a size no version of DtexStats has */
  EXPECT_STATUS(dtex_loader_get_stats(loader, &stats), DTEX_STATUS_INVALID_ARGUMENT);
}

static void test_errors(void) {
  DtexLoader null_loader = {0};
  DtexStats stats;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  EXPECT_STATUS(dtex_loader_get_stats(null_loader, &stats), DTEX_STATUS_INVALID_HANDLE);
  EXPECT_STATUS(dtex_loader_destroy(null_loader), DTEX_STATUS_INVALID_HANDLE);
  DtexLaunch launch = {0};
  EXPECT_STATUS(dtex_launch_discard(launch), DTEX_STATUS_INVALID_HANDLE);
  DtexTicket ticket = {0};
  EXPECT_STATUS(dtex_ticket_wait(ticket, 0), DTEX_STATUS_INVALID_HANDLE);

  /* Bad struct_size: an error, and the out parameter untouched. */
  DtexLoaderOptions options;
  dtex_loader_options_default(&options);
  options.struct_size = sizeof options + 8;
  DtexLoader loader = {12345};
  EXPECT_STATUS(dtex_loader_create(&options, &loader), DTEX_STATUS_INVALID_ARGUMENT);
  CHECK(loader.id == 12345, "a failed create wrote its out parameter");
  options.struct_size = 0;
  EXPECT_STATUS(dtex_loader_create(&options, &loader), DTEX_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS(dtex_loader_create(NULL, NULL), DTEX_STATUS_INVALID_ARGUMENT);

  /* A destroyed handle, and a launch of a destroyed loader. */
  loader = create_loader();
  EXPECT_OK(dtex_launch_prepare(loader, &launch));
  EXPECT_OK(dtex_loader_destroy(loader));
  EXPECT_STATUS(dtex_loader_destroy(loader), DTEX_STATUS_INVALID_HANDLE);
  DtexLaunch untouched = {777};
  EXPECT_STATUS(dtex_launch_prepare(loader, &untouched), DTEX_STATUS_INVALID_HANDLE);
  CHECK(untouched.id == 777, "a failed prepare wrote its out parameter");
  DtexSample sample;
  EXPECT_STATUS(dtex_launch_tex2d(launch, 0, 0.5f, 0.5f, NULL, &sample),
                DTEX_STATUS_INVALID_HANDLE);
  EXPECT_STATUS(dtex_launch_discard(launch), DTEX_STATUS_INVALID_HANDLE);

  CHECK(strcmp(dtex_status_string(DTEX_STATUS_OK), "DTEX_STATUS_OK") == 0, "status string OK");
  CHECK(strcmp(dtex_status_string(DTEX_STATUS_INVALID_HANDLE), "DTEX_STATUS_INVALID_HANDLE") == 0,
        "status string INVALID_HANDLE: %s", dtex_status_string(DTEX_STATUS_INVALID_HANDLE));
  CHECK(strcmp(dtex_status_string(-7), "unknown status") == 0, "status string of -7: %s",
        dtex_status_string(-7));
}

static void test_unknown_texture(DtexLoader loader) {
  DtexLaunch launch = {0};
  EXPECT_OK(dtex_launch_prepare(loader, &launch));
  DtexSample sample;
  EXPECT_OK(dtex_launch_tex2d(launch, 60, 0.5f, 0.5f, NULL, &sample));
  EXPECT_STATUS(dtex_launch_tex2d(launch, 60, 0.5f, 0.5f, NULL, NULL),
                DTEX_STATUS_INVALID_ARGUMENT);
  EXPECT_OK(dtex_launch_discard(launch));
}

/* ---- UDIM patterns: which files a pattern names, by core's rule -------------------------- */

#define MAX_TILES 8

typedef struct {
  int count;
  int stop_after; /* answer DTEX_UDIM_TILE_STOP at this tile (1-based); 0: never */
  uint32_t udim[MAX_TILES], column[MAX_TILES], row[MAX_TILES];
  char path[MAX_TILES][512];
} TileList;

static int32_t collect_tile(void *user_data, uint32_t udim, uint32_t column, uint32_t row,
                            const char *path) {
  TileList *list = user_data;
  if (list->count >= MAX_TILES) {
    return DTEX_UDIM_TILE_STOP;
  }
  int i = list->count++;
  list->udim[i] = udim;
  list->column[i] = column;
  list->row[i] = row;
  snprintf(list->path[i], sizeof list->path[i], "%s", path); /* valid only during the call */
  return list->count == list->stop_after ? DTEX_UDIM_TILE_STOP : DTEX_UDIM_TILE_CONTINUE;
}

static const char *UDIM_FILES[] = {"c.1101.exr", "c.1102.exr", "c.1999.exr", "c.1000.exr",
                                   "w_u11_v1.exr"};
#define NUM_UDIM_FILES (sizeof UDIM_FILES / sizeof UDIM_FILES[0])

static void test_udim_pattern(void) {
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0') {
    tmp = "/tmp";
  }
  char dir[400];
  snprintf(dir, sizeof dir, "%s/dtex-c-consumer-XXXXXX", tmp);
  CHECK(mkdtemp(dir) != NULL, "mkdtemp(%s) failed", dir);
  char path[512];
  for (size_t i = 0; i < NUM_UDIM_FILES; ++i) {
    snprintf(path, sizeof path, "%s/%s", dir, UDIM_FILES[i]);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot create %s", path);
    fclose(f);
  }

  /* A set starting at 1101 and reaching 1999 (1000 is no UDIM number): row-major. */
  char pattern[512];
  snprintf(pattern, sizeof pattern, "%s/c.<UDIM>.exr", dir);
  TileList list;
  memset(&list, 0, sizeof list);
  uint32_t count = 99;
  EXPECT_OK(dtex_udim_expand_pattern(pattern, collect_tile, &list, &count));
  CHECK(count == 3 && list.count == 3, "%s: %u tiles reported, %d collected", pattern,
        (unsigned)count, list.count);
  const uint32_t want[3][3] = {{1101, 0, 10}, {1102, 1, 10}, {1999, 8, 99}};
  for (int i = 0; i < 3; ++i) {
    CHECK(list.udim[i] == want[i][0] && list.column[i] == want[i][1] && list.row[i] == want[i][2],
          "tile %d: udim %u, column %u, row %u", i, (unsigned)list.udim[i],
          (unsigned)list.column[i], (unsigned)list.row[i]);
  }
  snprintf(path, sizeof path, "%s/c.1101.exr", dir);
  CHECK(strcmp(list.path[0], path) == 0, "tile 1101 is %s, expected %s", list.path[0], path);

  /* <UVTILE> u11: column 10, no UDIM number. */
  snprintf(pattern, sizeof pattern, "%s/w_<UVTILE>.exr", dir);
  memset(&list, 0, sizeof list);
  EXPECT_OK(dtex_udim_expand_pattern(pattern, collect_tile, &list, &count));
  CHECK(count == 1 && list.udim[0] == DTEX_UDIM_NO_NUMBER && list.column[0] == 10 &&
            list.row[0] == 0,
        "u11_v1: %u tiles, udim %u, column %u, row %u", (unsigned)count, (unsigned)list.udim[0],
        (unsigned)list.column[0], (unsigned)list.row[0]);

  /* Stopping early; counting without a callback. */
  snprintf(pattern, sizeof pattern, "%s/c.<UDIM>.exr", dir);
  memset(&list, 0, sizeof list);
  list.stop_after = 1;
  EXPECT_OK(dtex_udim_expand_pattern(pattern, collect_tile, &list, &count));
  CHECK(count == 1 && list.count == 1, "stopped after %u tiles", (unsigned)count);
  EXPECT_OK(dtex_udim_expand_pattern(pattern, NULL, NULL, &count));
  CHECK(count == 3, "counted %u tiles", (unsigned)count);

  /* No file matches: OK, no tile (creating a texture from it would be IO_ERROR). */
  snprintf(pattern, sizeof pattern, "%s/none.<UDIM>.exr", dir);
  memset(&list, 0, sizeof list);
  EXPECT_OK(dtex_udim_expand_pattern(pattern, collect_tile, &list, &count));
  CHECK(count == 0 && list.count == 0, "no match gave %u tiles", (unsigned)count);

  /* Errors: no token, NULLs, a directory that cannot be listed. */
  snprintf(pattern, sizeof pattern, "%s/c.1101.exr", dir);
  count = 99;
  EXPECT_STATUS(dtex_udim_expand_pattern(pattern, collect_tile, &list, &count),
                DTEX_STATUS_INVALID_ARGUMENT);
  CHECK(count == 99, "a failed expansion wrote its count");
  EXPECT_STATUS(dtex_udim_expand_pattern(NULL, NULL, NULL, &count), DTEX_STATUS_INVALID_ARGUMENT);
  EXPECT_STATUS(dtex_udim_expand_pattern("c.<UDIM>.exr", NULL, NULL, NULL),
                DTEX_STATUS_INVALID_ARGUMENT);
  snprintf(pattern, sizeof pattern, "%s/missing/c.<UDIM>.exr", dir);
  EXPECT_STATUS(dtex_udim_expand_pattern(pattern, NULL, NULL, &count), DTEX_STATUS_IO_ERROR);

  for (size_t i = 0; i < NUM_UDIM_FILES; ++i) {
    snprintf(path, sizeof path, "%s/%s", dir, UDIM_FILES[i]);
    CHECK(remove(path) == 0, "cannot remove %s", path);
  }
  CHECK(rmdir(dir) == 0, "cannot remove %s", dir);
  printf("  UDIM patterns: 1101-1999 and u11_v1 expanded through dtex_udim_expand_pattern\n");
}

/* tests/c-consumer/ptex.c */
void test_ptex(void);
void test_files(void);

static void test_version(void) {
  char macros[64];
  snprintf(macros, sizeof macros, "%u.%u.%u", (unsigned)DTEX_VERSION_MAJOR,
           (unsigned)DTEX_VERSION_MINOR, (unsigned)DTEX_VERSION_PATCH);
  const char *runtime = dtex_version_string();
  CHECK(runtime != NULL && strcmp(runtime, macros) == 0,
        "dtex_version_string() \"%s\", macros say %s", runtime ? runtime : "(null)", macros);
  CHECK(dtex_version() == DTEX_VERSION_MAJOR * 10000u + DTEX_VERSION_MINOR * 100u +
                              DTEX_VERSION_PATCH,
        "dtex_version() %u", (unsigned)dtex_version());
  CHECK(dtex_abi_version() == DTEX_ABI_VERSION, "dtex_abi_version() %u, DTEX_ABI_VERSION %u",
        (unsigned)dtex_abi_version(), (unsigned)DTEX_ABI_VERSION);
  printf("  demandtex %s (ABI %u)\n", runtime, (unsigned)dtex_abi_version());
}

int main(void) {
  printf("c-consumer:\n");
  test_version();
  test_errors();
  test_udim_pattern();
  test_ptex();
  test_files();
  test_constant_tiles(1);
  test_constant_tiles(0);

  DtexLoader loader = create_loader();
  int launches = test_procedural(loader);
  launches += test_callbacks(loader);
  test_unknown_texture(loader);
  test_stats(loader, launches);
  EXPECT_OK(dtex_loader_destroy(loader));
  CHECK(atomic_load(&gradient.closes) == 1, "close called %d times after the loader was destroyed",
        atomic_load(&gradient.closes));
  EXPECT_STATUS(dtex_loader_destroy(loader), DTEX_STATUS_INVALID_HANDLE);

  printf("c-consumer: all checks passed\n");
  return 0;
}
