//! `computer_use`'s arguments as OpenManus reads them: numbers may come as numeric strings,
//! coordinates are rounded as Python rounds, and the defaults are OpenManus's.

use serde_json::Value;

use crate::keys::MOUSE_BUTTONS;

/// The arguments as OpenManus reads them (numbers may come as numeric strings).
#[derive(Debug, Default)]
pub(crate) struct Args {
    pub(crate) x: Option<f64>,
    pub(crate) y: Option<f64>,
    pub(crate) button: String,
    pub(crate) num_clicks: Option<f64>,
    pub(crate) amount: Option<f64>,
    pub(crate) text: Option<String>,
    pub(crate) key: Option<String>,
    pub(crate) keys: Option<String>,
    pub(crate) duration: Option<f64>,
}

fn number(args: &Value, name: &str) -> Result<Option<f64>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .map(Some)
            .map_err(|_| format!("{name} must be a number, not {s:?}")),
        Some(other) => Err(format!("{name} must be a number, not {other}")),
    }
    .and_then(|n| match n {
        Some(n) if !n.is_finite() => Err(format!("{name} must be a finite number")),
        n => Ok(n),
    })
}

fn text(args: &Value, name: &str) -> Option<String> {
    match args.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    }
}

impl Args {
    pub(crate) fn parse(args: &Value) -> Result<Self, String> {
        Ok(Self {
            x: number(args, "x")?,
            y: number(args, "y")?,
            button: text(args, "button").unwrap_or_else(|| "left".to_owned()),
            num_clicks: number(args, "num_clicks")?,
            amount: number(args, "amount")?,
            text: text(args, "text"),
            key: text(args, "key"),
            keys: text(args, "keys"),
            duration: number(args, "duration")?,
        })
    }
}

/// Python's `int(round(v))`: halves to even.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn round(value: f64) -> i64 {
    value.round_ties_even().clamp(-1e15, 1e15) as i64
}

/// The X button of a schema button name.
pub(crate) fn x_button(name: &str) -> Result<u8, String> {
    match name.to_ascii_lowercase().as_str() {
        "left" => Ok(1),
        "middle" => Ok(2),
        "right" => Ok(3),
        _ => Err(format!(
            "unknown mouse button {name:?} (one of {})",
            MOUSE_BUTTONS.join(", ")
        )),
    }
}

/// Python's `str(float)` for a wait's duration, with `max(0, min(10, d))`'s integer ends.
pub(crate) fn seconds_text(duration: f64) -> String {
    if duration >= 10.0 {
        "10".to_owned()
    } else if duration <= 0.0 {
        "0".to_owned()
    } else {
        format!("{duration:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_pythons() {
        assert_eq!(round(2.5), 2);
        assert_eq!(round(3.5), 4);
        assert_eq!(round(-0.4), 0);
    }

    #[test]
    fn waits_read_as_python_prints_them() {
        assert_eq!(seconds_text(0.5), "0.5");
        assert_eq!(seconds_text(2.0), "2.0");
        assert_eq!(seconds_text(30.0), "10");
        assert_eq!(seconds_text(-1.0), "0");
    }

    #[test]
    fn buttons_are_checked() {
        assert_eq!(x_button("Right"), Ok(3));
        assert!(
            x_button("thumb")
                .unwrap_err()
                .contains("left, right, middle")
        );
    }
}
