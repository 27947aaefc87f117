//! `sandbox_vision`: show the model an image of the sandbox workspace — size and type checked,
//! downscaled to fit 1920×1080, re-encoded, attached to the result as base64.

use std::io::Cursor;
use std::sync::Arc;

use agent_tools::{ToolContext, ToolError, ToolResult, TypedTool};
use async_trait::async_trait;
use base64::Engine as _;
use image::{DynamicImage, GenericImageView, ImageFormat, Rgba, RgbaImage};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{Sandbox, SandboxError};

/// The tool's name.
pub const SANDBOX_VISION: &str = "sandbox_vision";
/// The largest image file read, in bytes (10 MB).
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;
/// The largest encoded image attached, in bytes (5 MB).
pub const MAX_OUTPUT_BYTES: usize = 5 * 1024 * 1024;
/// Images are downscaled to fit this box.
pub const MAX_SIZE: (u32, u32) = (1920, 1080);

/// What `sandbox_vision` should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VisionAction {
    /// Look at the image `file_path`.
    SeeImage,
}

/// Arguments of `sandbox_vision`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct VisionArgs {
    /// The action: see_image.
    pub action: VisionAction,
    /// The image, relative to the workspace (jpg, jpeg, png, gif or webp).
    pub file_path: String,
}

/// `sandbox_vision` over a [`Sandbox`].
pub struct SandboxVision {
    sandbox: Arc<dyn Sandbox>,
}

impl std::fmt::Debug for SandboxVision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxVision").finish_non_exhaustive()
    }
}

impl SandboxVision {
    /// The tool over `sandbox`.
    pub fn new(sandbox: Arc<dyn Sandbox>) -> Self {
        Self { sandbox }
    }
}

/// The input format by extension, or `None` for an unsupported one.
fn format_of(path: &str) -> Option<ImageFormat> {
    let extension = std::path::Path::new(path)
        .extension()?
        .to_string_lossy()
        .to_ascii_lowercase();
    match extension.as_str() {
        "jpg" | "jpeg" => Some(ImageFormat::Jpeg),
        "png" => Some(ImageFormat::Png),
        "gif" => Some(ImageFormat::Gif),
        "webp" => Some(ImageFormat::WebP),
        _ => None,
    }
}

/// An image ready to attach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compressed {
    /// The encoded image.
    pub bytes: Vec<u8>,
    /// Its MIME type.
    pub mime: &'static str,
    /// Its width and height.
    pub size: (u32, u32),
}

/// Downscales `image` to fit [`MAX_SIZE`] and encodes it: JPEG (quality 85, transparency
/// flattened onto white) for JPEG input, PNG otherwise.
///
/// # Errors
///
/// An encoding error, as text.
pub fn compress(image: &DynamicImage, input: ImageFormat) -> Result<Compressed, String> {
    let (width, height) = image.dimensions();
    let image = if width > MAX_SIZE.0 || height > MAX_SIZE.1 {
        image.resize(
            MAX_SIZE.0,
            MAX_SIZE.1,
            image::imageops::FilterType::Lanczos3,
        )
    } else {
        image.clone()
    };
    let size = image.dimensions();
    let mut out = Cursor::new(Vec::new());
    let mime = if input == ImageFormat::Jpeg {
        let rgba = image.to_rgba8();
        let mut flat = RgbaImage::from_pixel(size.0, size.1, Rgba([255, 255, 255, 255]));
        image::imageops::overlay(&mut flat, &rgba, 0, 0);
        let rgb = DynamicImage::ImageRgba8(flat).to_rgb8();
        let mut encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
        encoder
            .encode_image(&rgb)
            .map_err(|e| format!("could not encode the image: {e}"))?;
        "image/jpeg"
    } else {
        image
            .write_to(&mut out, ImageFormat::Png)
            .map_err(|e| format!("could not encode the image: {e}"))?;
        "image/png"
    };
    Ok(Compressed {
        bytes: out.into_inner(),
        mime,
        size,
    })
}

async fn see(sandbox: &dyn Sandbox, path: &str) -> Result<ToolResult, String> {
    let path = path.trim();
    let format = format_of(path).ok_or_else(|| {
        format!("'{path}' is not a supported image: use a jpg, jpeg, png, gif or webp file")
    })?;
    let too_big = |len: u64| {
        format!(
            "'{path}' is {:.1} MB; images larger than 10 MB are not loaded",
            len as f64 / 1_048_576.0
        )
    };
    // The size is checked before the file is read.
    let host = sandbox.host_path(path).map_err(|e| e.to_string())?;
    match tokio::fs::metadata(&host).await {
        Ok(meta) if meta.is_dir() => return Err(format!("'{path}' is a directory, not an image")),
        Ok(meta) if meta.len() > MAX_IMAGE_BYTES as u64 => return Err(too_big(meta.len())),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("Image file not found: '{path}'"));
        }
        Err(e) => return Err(format!("Could not read '{path}': {e}")),
    }
    let bytes = match sandbox.read_file(path).await {
        Ok(bytes) => bytes,
        Err(SandboxError::NotFound(_)) => return Err(format!("Image file not found: '{path}'")),
        Err(e) => return Err(format!("Could not read '{path}': {e}")),
    };
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    let size_on_disk = bytes.len();
    let decoded = tokio::task::spawn_blocking(move || {
        let image = image::load_from_memory_with_format(&bytes, format)
            .map_err(|e| format!("could not decode it as an image: {e}"))?;
        let dimensions = image.dimensions();
        compress(&image, format).map(|compressed| (dimensions, compressed))
    })
    .await
    .map_err(|e| format!("Could not process '{path}': {e}"))?;
    let ((width, height), compressed) = decoded.map_err(|e| format!("'{path}': {e}"))?;
    let Compressed {
        bytes: encoded,
        mime,
        size,
    } = compressed;
    if encoded.len() > MAX_OUTPUT_BYTES {
        return Err(format!(
            "'{path}' is still larger than 5 MB after compression; crop or shrink it first"
        ));
    }
    let text = format!(
        "Loaded the image '{path}' ({width}x{height}, {} KB) and attached it as {mime}, {}x{} ({} KB).",
        size_on_disk.div_ceil(1024),
        size.0,
        size.1,
        encoded.len().div_ceil(1024)
    );
    Ok(ToolResult::success(text)
        .with_image(base64::engine::general_purpose::STANDARD.encode(encoded)))
}

#[async_trait]
impl TypedTool for SandboxVision {
    type Args = VisionArgs;

    fn name(&self) -> &str {
        SANDBOX_VISION
    }

    fn description(&self) -> &str {
        "Look at an image file of the sandbox workspace (jpg, jpeg, png, gif or webp, at most \
         10 MB): it is attached to the result, downscaled to fit 1920x1080, so you can see it. \
         Use it to check screenshots, charts or pictures the task produced or received."
    }

    async fn call(&self, args: VisionArgs, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let VisionAction::SeeImage = args.action;
        Ok(match see(self.sandbox.as_ref(), &args.file_path).await {
            Ok(result) => result,
            Err(message) => ToolResult::failure(message),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_images_are_downscaled_to_fit_and_keep_their_aspect() {
        let image =
            DynamicImage::ImageRgba8(RgbaImage::from_pixel(3840, 1000, Rgba([10, 20, 30, 255])));
        let Compressed { bytes, mime, size } = compress(&image, ImageFormat::Png).unwrap();
        assert_eq!(mime, "image/png");
        assert_eq!(size, (1920, 500));
        let decoded = image::load_from_memory(&bytes).unwrap();
        assert_eq!(decoded.dimensions(), (1920, 500));
    }

    #[test]
    fn jpeg_is_reencoded_with_transparency_flattened_onto_white() {
        let image = DynamicImage::ImageRgba8(RgbaImage::from_pixel(4, 4, Rgba([0, 0, 0, 0])));
        let Compressed { bytes, mime, size } = compress(&image, ImageFormat::Jpeg).unwrap();
        assert_eq!((mime, size), ("image/jpeg", (4, 4)));
        let decoded = image::load_from_memory(&bytes).unwrap().to_rgb8();
        let pixel = decoded.get_pixel(1, 1);
        assert!(pixel.0.iter().all(|c| *c > 240), "{pixel:?}");
    }

    #[test]
    fn only_image_extensions_are_accepted() {
        assert_eq!(format_of("a/b.JPG"), Some(ImageFormat::Jpeg));
        assert_eq!(format_of("x.webp"), Some(ImageFormat::WebP));
        assert_eq!(format_of("notes.txt"), None);
        assert_eq!(format_of("noext"), None);
    }
}
