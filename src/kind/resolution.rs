//! The size of a network's input: one side for a square (`224`), or a `[height, width]` pair
//! for the non-square inputs person re-identification uses (`[256, 128]`).
//!
//! One type, so the loaders, the crops and the FLOP count all read both sides from one value
//! instead of assuming a square. A pipeline writes either form; a pair of equal sides is the
//! square and is stored as its integer (see [`Resolution::canonical`]), so every key made
//! before pairs existed stays as it was.

use std::fmt;

use serde_json::Value;

/// The height and width of a network input, in pixels (both at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resolution {
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
}

impl Resolution {
    /// The `side x side` square.
    pub const fn square(side: u32) -> Self {
        Resolution {
            height: side,
            width: side,
        }
    }

    /// Whether both sides are equal.
    pub(crate) fn is_square(self) -> bool {
        self.height == self.width
    }

    /// The longer side.
    pub fn largest_side(self) -> u32 {
        self.height.max(self.width)
    }

    /// Width over height (1 for a square).
    pub fn aspect(self) -> f64 {
        f64::from(self.width) / f64::from(self.height)
    }

    /// Pixels per channel.
    pub fn pixels(self) -> usize {
        self.height as usize * self.width as usize
    }

    /// Reads a parameter value: a positive integer, or an array of two positive integers
    /// `[height, width]`. `None` for anything else.
    pub fn from_value(value: &Value) -> Option<Resolution> {
        let side = |v: &Value| {
            v.as_u64()
                .filter(|&s| (1..=u64::from(u32::MAX)).contains(&s))
                .map(|s| s as u32)
        };
        match value {
            Value::Number(_) => side(value).map(Resolution::square),
            Value::Array(items) if items.len() == 2 => Some(Resolution {
                height: side(&items[0])?,
                width: side(&items[1])?,
            }),
            _ => None,
        }
    }

    /// The value a pipeline parameter is stored (and keyed) as: the integer for a square,
    /// `[height, width]` otherwise.
    pub fn canonical(self) -> Value {
        if self.is_square() {
            Value::from(self.height)
        } else {
            Value::from(vec![self.height, self.width])
        }
    }
}

impl From<u32> for Resolution {
    fn from(side: u32) -> Self {
        Resolution::square(side)
    }
}

impl fmt::Display for Resolution {
    /// `224` for a square, `256x128` (height x width) otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_square() {
            write!(f, "{}", self.height)
        } else {
            write!(f, "{}x{}", self.height, self.width)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_an_integer_or_a_height_width_pair() {
        assert_eq!(
            Resolution::from_value(&json!(224)),
            Some(Resolution::square(224))
        );
        assert_eq!(
            Resolution::from_value(&json!([256, 128])),
            Some(Resolution {
                height: 256,
                width: 128
            })
        );
        for bad in [
            json!(0),
            json!(-3),
            json!(2.5),
            json!([256]),
            json!([256, 128, 3]),
            json!([256, 0]),
            json!("256x128"),
            json!([256, "128"]),
        ] {
            assert_eq!(Resolution::from_value(&bad), None, "{bad}");
        }
    }

    #[test]
    fn a_square_pair_is_stored_as_its_integer() {
        let pair = Resolution::from_value(&json!([64, 64])).unwrap();
        assert_eq!(pair.canonical(), json!(64));
        assert_eq!(
            Resolution::from_value(&json!([256, 128]))
                .unwrap()
                .canonical(),
            json!([256, 128])
        );
        assert_eq!(pair.to_string(), "64");
        assert_eq!(
            Resolution::from_value(&json!([256, 128]))
                .unwrap()
                .to_string(),
            "256x128"
        );
    }
}
