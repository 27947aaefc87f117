//! What a screenshot becomes: a PNG scaled as OpenManus scales images for a model, and the
//! file name OpenManus saves it under.

use agent_sandbox::tools::{Compressed, MAX_SIZE, compress};
use image::{DynamicImage, ImageFormat, RgbImage};

/// A screenshot as PNG: scaled as OpenManus scales the images it shows a model (down to fit
/// 1920×1080, `sandbox_vision`'s rule), encoded with fast compression and no filtering (a
/// screenshot is taken often and read once; flat screen areas compress well without filters).
pub(crate) fn encode(image: RgbImage) -> Result<Compressed, String> {
    use image::ImageEncoder as _;
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    let (width, height) = image.dimensions();
    if width > MAX_SIZE.0 || height > MAX_SIZE.1 {
        return compress(&DynamicImage::ImageRgb8(image), ImageFormat::Png);
    }
    let mut bytes = Vec::new();
    PngEncoder::new_with_quality(&mut bytes, CompressionType::Fast, FilterType::NoFilter)
        .write_image(image.as_raw(), width, height, image::ColorType::Rgb8)
        .map_err(|e| format!("could not encode the screenshot: {e}"))?;
    Ok(Compressed {
        bytes,
        mime: "image/png",
        size: (width, height),
    })
}

/// `YYYYmmdd_HHMMSS` in UTC.
pub(crate) fn timestamp() -> String {
    chrono::Utc::now().format("%Y%m%d_%H%M%S").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screenshots_larger_than_the_box_are_scaled_to_fit() {
        let big = RgbImage::from_pixel(3840, 200, image::Rgb([1, 2, 3]));
        let small = RgbImage::from_pixel(1024, 768, image::Rgb([1, 2, 3]));
        assert_eq!(encode(big).unwrap().size, (1920, 100));
        let encoded = encode(small).unwrap();
        assert_eq!(encoded.size, (1024, 768));
        let decoded = image::load_from_memory(&encoded.bytes).unwrap().to_rgb8();
        assert_eq!(decoded.dimensions(), (1024, 768));
        assert_eq!(decoded.get_pixel(500, 500).0, [1, 2, 3]);
    }

    #[test]
    fn the_timestamp_has_openmanus_shape() {
        let ts = timestamp();
        assert_eq!(ts.len(), 15, "{ts}");
        assert_eq!(&ts[8..9], "_");
        assert!(ts.starts_with("20"), "{ts}");
    }
}
