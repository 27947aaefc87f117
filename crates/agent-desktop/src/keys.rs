//! Key names (OpenManus's `computer_use` key list, with a few aliases) and characters to X
//! keysyms.

/// The `key`/`keys` enum of OpenManus's schema (a compatibility fact), in its order.
pub const KEYBOARD_KEYS: &[&str] = &[
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
    "h",
    "i",
    "j",
    "k",
    "l",
    "m",
    "n",
    "o",
    "p",
    "q",
    "r",
    "s",
    "t",
    "u",
    "v",
    "w",
    "x",
    "y",
    "z",
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "7",
    "8",
    "9",
    "enter",
    "esc",
    "backspace",
    "tab",
    "space",
    "delete",
    "ctrl",
    "alt",
    "shift",
    "win",
    "up",
    "down",
    "left",
    "right",
    "f1",
    "f2",
    "f3",
    "f4",
    "f5",
    "f6",
    "f7",
    "f8",
    "f9",
    "f10",
    "f11",
    "f12",
    "ctrl+c",
    "ctrl+v",
    "ctrl+x",
    "ctrl+z",
    "ctrl+a",
    "ctrl+s",
    "alt+tab",
    "alt+f4",
    "ctrl+alt+delete",
];

/// The mouse buttons of the schema.
pub const MOUSE_BUTTONS: &[&str] = &["left", "right", "middle"];

/// The X keysym `Shift_L`.
pub const SHIFT_L: u32 = 0xffe1;

/// The keysym of a single key name (case-insensitive): the schema's names, plus `escape`,
/// `return`, `pageup`, `pagedown`, `home`, `end`, `insert`, `super`/`cmd`/`meta`, `control`.
#[must_use]
pub fn keysym_of_name(name: &str) -> Option<u32> {
    let name = name.trim().to_ascii_lowercase();
    let named = match name.as_str() {
        "enter" | "return" => 0xff0d,
        "esc" | "escape" => 0xff1b,
        "backspace" => 0xff08,
        "tab" => 0xff09,
        "space" => 0x20,
        "delete" | "del" => 0xffff,
        "ctrl" | "control" => 0xffe3,
        "alt" => 0xffe9,
        "shift" => SHIFT_L,
        "win" | "super" | "cmd" | "meta" => 0xffeb,
        "up" => 0xff52,
        "down" => 0xff54,
        "left" => 0xff51,
        "right" => 0xff53,
        "home" => 0xff50,
        "end" => 0xff57,
        "pageup" => 0xff55,
        "pagedown" => 0xff56,
        "insert" => 0xff63,
        _ => {
            if let Some(n) = name.strip_prefix('f').and_then(|n| n.parse::<u32>().ok()) {
                return (1..=12).contains(&n).then_some(0xffbe + n - 1);
            }
            let mut chars = name.chars();
            return match (chars.next(), chars.next()) {
                (Some(c), None) if c.is_ascii_alphanumeric() => Some(u32::from(c)),
                _ => None,
            };
        }
    };
    Some(named)
}

/// The keysyms of a combination such as `ctrl+alt+delete` (split on `+`), or the first unknown
/// part.
///
/// # Errors
///
/// The part that is not a known key.
pub fn keysyms_of_combination(keys: &str) -> Result<Vec<u32>, String> {
    keys.split('+')
        .map(|part| keysym_of_name(part).ok_or_else(|| part.trim().to_owned()))
        .collect()
}

/// The keysym that types `c`: Latin-1 characters are their own keysym, a few controls are
/// function keys, everything else is a Unicode keysym (`0x0100_0000 + code point`).
#[must_use]
pub fn keysym_of_char(c: char) -> u32 {
    let code = u32::from(c);
    match c {
        '\n' | '\r' => 0xff0d,
        '\t' => 0xff09,
        '\u{8}' => 0xff08,
        _ if (0x20..=0x7e).contains(&code) || (0xa0..=0xff).contains(&code) => code,
        _ => 0x0100_0000 + code,
    }
}

/// The text listing the known keys, for an error message.
#[must_use]
pub fn known_keys() -> String {
    KEYBOARD_KEYS.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_key_is_known() {
        for key in KEYBOARD_KEYS {
            assert!(keysyms_of_combination(key).is_ok(), "{key}");
        }
        assert_eq!(
            keysyms_of_combination("ctrl+alt+delete"),
            Ok(vec![0xffe3, 0xffe9, 0xffff])
        );
        assert_eq!(keysym_of_name("F12"), Some(0xffc9));
        assert_eq!(keysym_of_name("A"), Some(u32::from('a')));
    }

    #[test]
    fn unknown_keys_are_named() {
        assert_eq!(keysym_of_name("f13"), None);
        assert_eq!(keysym_of_name("banana"), None);
        assert_eq!(keysyms_of_combination("ctrl+banana"), Err("banana".into()));
        assert_eq!(keysyms_of_combination("ctrl+"), Err(String::new()));
    }

    #[test]
    fn characters_map_to_latin1_or_unicode_keysyms() {
        assert_eq!(keysym_of_char('a'), 0x61);
        assert_eq!(keysym_of_char('é'), 0xe9);
        assert_eq!(keysym_of_char('\n'), 0xff0d);
        assert_eq!(keysym_of_char('€'), 0x0100_20ac);
    }
}
