//! Texel decoding specialised per format at compile time. The samplers pick one decoder per
//! lookup (one `match` on the sampler's format) and run the whole filter with it, so the
//! inner loops have no per-component dispatch. Results equal
//! [`TexelFormat::decode`](crate::textures::TexelFormat::decode) bit for bit.

use super::halves::halves4;
use crate::textures::BlockCodec;
use half::f16;
use std::marker::PhantomData;

/// One component type: its size and how to read component `i` of a texel.
pub(crate) trait Component {
    /// Bytes of one component.
    const BYTES: usize;
    /// Component `i` of the texel at the start of `b`.
    fn get(b: &[u8], i: usize) -> f32;

    /// Components 0 to 3 of the texel at the start of `b`.
    #[inline(always)]
    fn get4(b: &[u8]) -> [f32; 4] {
        std::array::from_fn(|i| Self::get(b, i))
    }
}

/// 8-bit unsigned, normalised.
pub(crate) struct Unorm8;
/// 16-bit unsigned, normalised.
pub(crate) struct Unorm16;
/// IEEE half.
pub(crate) struct Half;
/// IEEE single.
pub(crate) struct Float;

impl Component for Unorm8 {
    const BYTES: usize = 1;
    #[inline(always)]
    fn get(b: &[u8], i: usize) -> f32 {
        b[i] as f32 * (1.0 / 255.0)
    }
}

impl Component for Unorm16 {
    const BYTES: usize = 2;
    #[inline(always)]
    fn get(b: &[u8], i: usize) -> f32 {
        u16::from_le_bytes([b[2 * i], b[2 * i + 1]]) as f32 * (1.0 / 65535.0)
    }
}

impl Component for Half {
    const BYTES: usize = 2;
    #[inline(always)]
    fn get(b: &[u8], i: usize) -> f32 {
        f16::from_le_bytes([b[2 * i], b[2 * i + 1]]).to_f32()
    }

    /// One F16C conversion where the CPU has it ([`halves4`]), else `get` per component.
    #[inline(always)]
    fn get4(b: &[u8]) -> [f32; 4] {
        halves4(b[..8].try_into().expect("eight bytes"))
            .unwrap_or_else(|| std::array::from_fn(|i| Self::get(b, i)))
    }
}

impl Component for Float {
    const BYTES: usize = 4;
    #[inline(always)]
    fn get(b: &[u8], i: usize) -> f32 {
        f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
    }
}

/// How a page stores texels: in units of one texel, or of one 4×4 block. Decodes one
/// texel of the unit at the start of a byte slice to RGBA.
pub(crate) trait Texel {
    /// Bytes of one unit (a texel, or a block).
    const BYTES: usize;
    /// log2 of the texels a unit spans on each side: 0 for texels, 2 for 4×4 blocks.
    const UNIT_SHIFT: u32;
    /// RGBA of texel (`x`, `y`) (each below `1 << UNIT_SHIFT`) of the unit at the start of
    /// `b` (1 channel: (c, c, c, 1); 2: (c0, c1, 0, 1)).
    fn decode(b: &[u8], x: usize, y: usize) -> [f32; 4];
}

/// The format of `N` components of type `C`.
pub(crate) struct Texels<C, const N: usize>(PhantomData<C>);

impl<C: Component, const N: usize> Texel for Texels<C, N> {
    const BYTES: usize = C::BYTES * N;
    const UNIT_SHIFT: u32 = 0;

    #[inline(always)]
    fn decode(b: &[u8], _x: usize, _y: usize) -> [f32; 4] {
        let b = &b[..Self::BYTES];
        match N {
            1 => {
                let c = C::get(b, 0);
                [c, c, c, 1.0]
            }
            2 => [C::get(b, 0), C::get(b, 1), 0.0, 1.0],
            _ => C::get4(b),
        }
    }
}

/// 4×4 blocks of the codec whose code is `CODE` ([`BlockCodec::code`]), decoding to texels
/// of format `D` (the codec's [`BlockCodec::served_format`]): the texel read is the one
/// the whole block's decode gives, so the samplers return what they return for the same
/// blocks decoded when the page was filled.
pub(crate) struct Blocks<const CODE: u32, D>(PhantomData<D>);

impl<const CODE: u32, D: Texel> Blocks<CODE, D> {
    const CODEC: BlockCodec = match BlockCodec::from_code(CODE) {
        Some(c) => c,
        None => panic!("not a block codec code"),
    };
}

impl<const CODE: u32, D: Texel> Texel for Blocks<CODE, D> {
    const BYTES: usize = Self::CODEC.block_bytes();
    const UNIT_SHIFT: u32 = 2;

    #[inline(always)]
    fn decode(b: &[u8], x: usize, y: usize) -> [f32; 4] {
        let mut raw = [0u8; 16];
        raw[..Self::BYTES].copy_from_slice(&b[..Self::BYTES]);
        RECENT_BLOCKS.with_borrow_mut(|recent| {
            let texels = recent.decoded(CODE, raw, |out| {
                Self::CODEC.decode_block(&raw[..Self::BYTES], &mut out[..16 * D::BYTES])
            });
            D::decode(&texels[(y * 4 + x) * D::BYTES..], 0, 0)
        })
    }
}

/// Blocks a thread decoded last, keyed by codec and contents (never by address: a page's
/// memory may hold other blocks later), so that the texels of a footprint that share a
/// block (9 in 16 bilinear footprints lie in one) decode it once.
struct RecentBlocks {
    keys: [(u32, [u8; 16]); RECENT_BLOCKS_KEPT],
    texels: [[u8; 16 * 16]; RECENT_BLOCKS_KEPT],
    next: usize,
}

/// Blocks [`RecentBlocks`] keeps: a footprint's 2×2 texels span at most four.
const RECENT_BLOCKS_KEPT: usize = 4;

impl RecentBlocks {
    /// The decoded texels of block `raw` of codec `code`: kept ones, else `decode`'s into
    /// the oldest entry.
    #[inline(always)]
    fn decoded(&mut self, code: u32, raw: [u8; 16], decode: impl FnOnce(&mut [u8])) -> &[u8] {
        let key = (code, raw);
        let i = match self.keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                let i = self.next;
                self.next = (i + 1) % RECENT_BLOCKS_KEPT;
                decode(&mut self.texels[i]);
                self.keys[i] = key;
                i
            }
        };
        &self.texels[i]
    }
}

thread_local! {
    /// Each thread's recently decoded blocks (code 0 is no codec: no key matches it).
    static RECENT_BLOCKS: std::cell::RefCell<RecentBlocks> = const {
        std::cell::RefCell::new(RecentBlocks {
            keys: [(0, [0; 16]); RECENT_BLOCKS_KEPT],
            texels: [[0; 16 * 16]; RECENT_BLOCKS_KEPT],
            next: 0,
        })
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::textures::{TexelFormat, TexelType};

    fn check<D: Texel>(format: TexelFormat) {
        assert_eq!(D::BYTES, format.texel_bytes());
        let values = [0.0, 0.125, 0.5, 1.0, -2.0, 3.5, f32::NAN, 1e-3, 0.999];
        let mut buf = [0u8; 16];
        for (k, &v) in values.iter().enumerate() {
            let rgba = [
                v,
                values[(k + 1) % 9],
                values[(k + 2) % 9],
                values[(k + 3) % 9],
            ];
            format.encode(rgba, &mut buf);
            let want = format.decode(&buf);
            let got = D::decode(&buf, 0, 0);
            for c in 0..4 {
                assert_eq!(got[c].to_bits(), want[c].to_bits(), "{format:?} {rgba:?}");
            }
        }
    }

    #[test]
    fn decoders_agree_with_texel_format_for_every_format() {
        use TexelType::*;
        let f = |t, c| TexelFormat::new(t, c).unwrap();
        check::<Texels<Unorm8, 1>>(f(U8, 1));
        check::<Texels<Unorm8, 2>>(f(U8, 2));
        check::<Texels<Unorm8, 4>>(f(U8, 4));
        check::<Texels<Unorm16, 1>>(f(U16, 1));
        check::<Texels<Unorm16, 2>>(f(U16, 2));
        check::<Texels<Unorm16, 4>>(f(U16, 4));
        check::<Texels<Half, 1>>(f(F16, 1));
        check::<Texels<Half, 2>>(f(F16, 2));
        check::<Texels<Half, 4>>(f(F16, 4));
        check::<Texels<Float, 1>>(f(F32, 1));
        check::<Texels<Float, 2>>(f(F32, 2));
        check::<Texels<Float, 4>>(f(F32, 4));
    }

    /// The decoder of each codec code in `filter::sample_blocks` reads the codec's served
    /// format and gives each texel of a block what the whole block's decode gives.
    #[test]
    fn block_decoders_read_each_texel_of_the_block_decode() {
        fn check<const CODE: u32, D: Texel>() {
            let codec = BlockCodec::from_code(CODE).unwrap();
            let format = codec.served_format();
            assert_eq!(D::BYTES, format.texel_bytes(), "{codec:?}");
            assert_eq!(Blocks::<CODE, D>::BYTES, codec.block_bytes());
            let mut rng = crate::test_rng::xorshift32(CODE * 7919 + 1);
            for _ in 0..50 {
                let block: Vec<u8> = (0..codec.block_bytes()).map(|_| rng() as u8).collect();
                let mut texels = vec![0u8; 16 * format.texel_bytes()];
                codec.decode_block(&block, &mut texels);
                for y in 0..4 {
                    for x in 0..4 {
                        let want = format.decode(&texels[(y * 4 + x) * format.texel_bytes()..]);
                        let got = Blocks::<CODE, D>::decode(&block, x, y);
                        for c in 0..4 {
                            assert_eq!(got[c].to_bits(), want[c].to_bits(), "{codec:?}");
                        }
                    }
                }
            }
        }
        type Rgba8 = Texels<Unorm8, 4>;
        check::<1, Rgba8>();
        check::<2, Rgba8>();
        check::<3, Rgba8>();
        check::<4, Texels<Unorm8, 1>>();
        check::<5, Texels<Float, 1>>();
        check::<6, Texels<Unorm8, 2>>();
        check::<7, Texels<Float, 2>>();
        check::<8, Texels<Half, 4>>();
        check::<9, Texels<Half, 4>>();
        check::<10, Rgba8>();
    }
}
