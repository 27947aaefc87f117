//! The X11 client: one connection to the display over its Unix socket, synthetic input through
//! the XTest extension, and screenshots of the root window. Blocking (x11rb's pure-Rust
//! connection); the tool calls it on tokio's blocking pool.

use std::collections::HashMap;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::thread::sleep;
use std::time::Duration;

use image::RgbImage;
use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::xproto::{
    BUTTON_PRESS_EVENT, BUTTON_RELEASE_EVENT, ConnectionExt as _, ImageFormat, ImageOrder,
    KEY_PRESS_EVENT, KEY_RELEASE_EVENT, MOTION_NOTIFY_EVENT, Window,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::{DefaultStream, RustConnection};
use x11rb::wrapper::ConnectionExt as _;

use crate::DesktopError;
use crate::keys::{SHIFT_L, keysym_of_char};

/// How a key is typed: its keycode, with Shift held or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stroke {
    keycode: u8,
    shift: bool,
}

/// A connection to one X display, with the keyboard mapping it has read and the keycodes it
/// has bound to keysyms that were missing from it.
pub struct XClient {
    conn: RustConnection,
    root: Window,
    width: u16,
    height: u16,
    min_keycode: u8,
    per_keycode: u8,
    /// The keysyms of every keycode from `min_keycode`, `per_keycode` each.
    mapping: Vec<u32>,
    /// Keycodes with no keysym, free to bind a missing keysym to (never given back: a client
    /// may look a key event up after the next change).
    spare: Vec<u8>,
    bound: HashMap<u32, u8>,
}

impl std::fmt::Debug for XClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XClient")
            .field("root", &self.root)
            .field("size", &(self.width, self.height))
            .finish_non_exhaustive()
    }
}

fn x_error(error: impl std::fmt::Display) -> DesktopError {
    DesktopError::X11(error.to_string())
}

impl XClient {
    /// Connects to the X server listening on the Unix socket `socket`, checks that it has the
    /// XTest extension, and reads its keyboard mapping.
    ///
    /// # Errors
    ///
    /// [`DesktopError::Connect`] when the socket cannot be reached or the server refuses us,
    /// [`DesktopError::X11`] for a protocol error or a missing XTest.
    pub fn connect(socket: &Path) -> Result<Self, DesktopError> {
        let connect = |e: &dyn std::fmt::Display| DesktopError::Connect {
            socket: socket.display().to_string(),
            reason: e.to_string(),
        };
        let stream = UnixStream::connect(socket).map_err(|e| connect(&e))?;
        let (stream, _) = DefaultStream::from_unix_stream(stream).map_err(|e| connect(&e))?;
        let conn = RustConnection::connect_to_stream(stream, 0).map_err(|e| connect(&e))?;
        if conn
            .extension_information(x11rb::protocol::xtest::X11_EXTENSION_NAME)
            .map_err(x_error)?
            .is_none()
        {
            return Err(DesktopError::X11(
                "the X server has no XTest extension".into(),
            ));
        }
        let setup = conn.setup();
        let screen = setup
            .roots
            .first()
            .ok_or_else(|| DesktopError::X11("the X server has no screen".into()))?;
        let (root, width, height) = (screen.root, screen.width_in_pixels, screen.height_in_pixels);
        let (min_keycode, max_keycode) = (setup.min_keycode, setup.max_keycode);
        let count = max_keycode.saturating_sub(min_keycode).saturating_add(1);
        let reply = conn
            .get_keyboard_mapping(min_keycode, count)
            .map_err(x_error)?
            .reply()
            .map_err(x_error)?;
        let per_keycode = reply.keysyms_per_keycode.max(1);
        let mapping = reply.keysyms;
        let spare = mapping
            .chunks(usize::from(per_keycode))
            .zip(min_keycode..=max_keycode)
            .filter(|(syms, _)| syms.iter().all(|s| *s == 0))
            .map(|(_, code)| code)
            .rev()
            .collect();
        Ok(Self {
            conn,
            root,
            width,
            height,
            min_keycode,
            per_keycode,
            mapping,
            spare,
            bound: HashMap::new(),
        })
    }

    /// The screen size in pixels.
    #[must_use]
    pub fn size(&self) -> (u32, u32) {
        (u32::from(self.width), u32::from(self.height))
    }

    /// Moves the pointer to `(x, y)` (on the screen; the caller checks).
    ///
    /// # Errors
    ///
    /// [`DesktopError::X11`] when the server cannot be told.
    pub fn move_to(&self, x: u32, y: u32) -> Result<(), DesktopError> {
        let (x, y) = (clamp_i16(x), clamp_i16(y));
        self.conn
            .xtest_fake_input(MOTION_NOTIFY_EVENT, 0, 0, self.root, x, y, 0)
            .map_err(x_error)?;
        self.sync()
    }

    /// Presses (`down`) or releases X button `button` (1 left, 2 middle, 3 right, 4/5 the
    /// wheel) where the pointer is.
    ///
    /// # Errors
    ///
    /// [`DesktopError::X11`].
    pub fn button(&self, button: u8, down: bool) -> Result<(), DesktopError> {
        let kind = if down {
            BUTTON_PRESS_EVENT
        } else {
            BUTTON_RELEASE_EVENT
        };
        self.conn
            .xtest_fake_input(kind, button, 0, self.root, 0, 0, 0)
            .map_err(x_error)?;
        self.sync()
    }

    /// Clicks `button` `count` times where the pointer is.
    ///
    /// # Errors
    ///
    /// [`DesktopError::X11`].
    pub fn click(&self, button: u8, count: u8) -> Result<(), DesktopError> {
        for _ in 0..count {
            self.button(button, true)?;
            self.button(button, false)?;
        }
        Ok(())
    }

    /// Types `text` character by character (Shift where a character needs it; a character
    /// missing from the keyboard mapping is bound to a spare keycode first).
    ///
    /// # Errors
    ///
    /// [`DesktopError::X11`], or [`DesktopError::Keyboard`] when no keycode is left to bind a
    /// character to.
    pub fn type_text(&mut self, text: &str, interval: Duration) -> Result<(), DesktopError> {
        for c in text.chars() {
            let stroke = self.stroke_for(keysym_of_char(c))?;
            let shift = if stroke.shift {
                Some(self.stroke_for(SHIFT_L)?.keycode)
            } else {
                None
            };
            if let Some(shift) = shift {
                self.key(shift, true)?;
            }
            self.key(stroke.keycode, true)?;
            self.key(stroke.keycode, false)?;
            if let Some(shift) = shift {
                self.key(shift, false)?;
            }
            self.sync()?;
            sleep(interval);
        }
        Ok(())
    }

    /// Presses the keysyms in order, then releases them in reverse order (one key, or a
    /// combination such as Control+C).
    ///
    /// # Errors
    ///
    /// [`DesktopError::X11`], [`DesktopError::Keyboard`].
    pub fn press_keysyms(&mut self, keysyms: &[u32]) -> Result<(), DesktopError> {
        let mut codes = Vec::with_capacity(keysyms.len());
        for &keysym in keysyms {
            let stroke = self.stroke_for(keysym)?;
            // A named key is pressed as itself: the shifted column only when the combination
            // itself does not say Shift (an upper-case letter keysym never comes from a name).
            codes.push(stroke.keycode);
        }
        for &code in &codes {
            self.key(code, true)?;
        }
        for &code in codes.iter().rev() {
            self.key(code, false)?;
        }
        self.sync()
    }

    /// The root window's pixels as RGB.
    ///
    /// # Errors
    ///
    /// [`DesktopError::X11`], or [`DesktopError::Screenshot`] for a pixel format this client
    /// does not read (anything but 24/32-bit true colour).
    pub fn screenshot(&self) -> Result<RgbImage, DesktopError> {
        let reply = self
            .conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                self.root,
                0,
                0,
                self.width,
                self.height,
                u32::MAX,
            )
            .map_err(x_error)?
            .reply()
            .map_err(x_error)?;
        let setup = self.conn.setup();
        let bits = setup
            .pixmap_formats
            .iter()
            .find(|f| f.depth == reply.depth)
            .map(|f| f.bits_per_pixel);
        if bits != Some(32) || reply.depth < 24 {
            return Err(DesktopError::Screenshot(format!(
                "unsupported pixel format (depth {}, {bits:?} bits per pixel)",
                reply.depth
            )));
        }
        let (width, height) = (u32::from(self.width), u32::from(self.height));
        let needed = usize::from(self.width) * usize::from(self.height) * 4;
        if reply.data.len() < needed {
            return Err(DesktopError::Screenshot(format!(
                "the server sent {} bytes for {width}x{height} pixels",
                reply.data.len()
            )));
        }
        let lsb = setup.image_byte_order == ImageOrder::LSB_FIRST;
        let mut rgb = Vec::with_capacity(needed / 4 * 3);
        for pixel in reply.data[..needed].chunks_exact(4) {
            // True colour with red 0xff0000, green 0x00ff00, blue 0x0000ff.
            if lsb {
                rgb.extend_from_slice(&[pixel[2], pixel[1], pixel[0]]);
            } else {
                rgb.extend_from_slice(&[pixel[1], pixel[2], pixel[3]]);
            }
        }
        RgbImage::from_raw(width, height, rgb)
            .ok_or_else(|| DesktopError::Screenshot("the image buffer has the wrong size".into()))
    }

    fn key(&self, keycode: u8, down: bool) -> Result<(), DesktopError> {
        let kind = if down {
            KEY_PRESS_EVENT
        } else {
            KEY_RELEASE_EVENT
        };
        self.conn
            .xtest_fake_input(kind, keycode, 0, self.root, 0, 0, 0)
            .map_err(x_error)?;
        Ok(())
    }

    /// Waits until the server has handled every request sent so far, and drops the events it
    /// sent us (only `MappingNotify` arrives unasked; nothing reads them).
    fn sync(&self) -> Result<(), DesktopError> {
        self.conn.sync().map_err(x_error)?;
        while self.conn.poll_for_event().map_err(x_error)?.is_some() {}
        Ok(())
    }

    /// The keycode (and Shift) that produces `keysym`, binding a spare keycode when the
    /// mapping has none.
    fn stroke_for(&mut self, keysym: u32) -> Result<Stroke, DesktopError> {
        if let Some(stroke) = self.find(keysym) {
            return Ok(stroke);
        }
        if let Some(&keycode) = self.bound.get(&keysym) {
            return Ok(Stroke {
                keycode,
                shift: false,
            });
        }
        let keycode = self.spare.pop().ok_or_else(|| {
            DesktopError::Keyboard(format!(
                "no free keycode is left to type the keysym {keysym:#x}"
            ))
        })?;
        let syms = vec![keysym; usize::from(self.per_keycode)];
        self.conn
            .change_keyboard_mapping(1, keycode, self.per_keycode, &syms)
            .map_err(x_error)?;
        self.sync()?;
        self.bound.insert(keysym, keycode);
        Ok(Stroke {
            keycode,
            shift: false,
        })
    }

    /// Looks `keysym` up in the mapping read at connection: the first keycode that has it in
    /// its first (plain) or second (shifted) column.
    fn find(&self, keysym: u32) -> Option<Stroke> {
        let per = usize::from(self.per_keycode);
        for column in 0..per.min(2) {
            for (index, syms) in self.mapping.chunks(per).enumerate() {
                if syms.get(column) == Some(&keysym) {
                    let keycode = u8::try_from(index)
                        .ok()
                        .and_then(|i| self.min_keycode.checked_add(i))?;
                    return Some(Stroke {
                        keycode,
                        shift: column == 1,
                    });
                }
            }
        }
        None
    }
}

fn clamp_i16(value: u32) -> i16 {
    i16::try_from(value).unwrap_or(i16::MAX)
}
