//! A reader for the subset of MATLAB's Level 5 MAT-file format that published data-set
//! annotations use (Cars196's `cars_annos.mat`): numeric arrays, character arrays, structs and
//! cells, compressed (`miCOMPRESSED`, zlib) or not, little- or big-endian. Enough to read
//! annotation tables without a MATLAB or Python dependency; sparse and object arrays are
//! refused with a message.
//!
//! Format reference: MathWorks, "MAT-File Format" (matfile_format.pdf), Level 5 chapter.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::data::DataError;

/// A value read from a MAT file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MatValue {
    /// A numeric or logical array, converted to f64, in column-major order.
    Num(Vec<f64>),
    /// A character array (a row of text).
    Char(String),
    /// A struct array: field names, then for each element its field values in that order.
    Struct {
        /// Field names.
        fields: Vec<String>,
        /// One row per element (column-major), one value per field.
        elements: Vec<Vec<MatValue>>,
    },
    /// A cell array, column-major.
    Cell(Vec<MatValue>),
}

impl MatValue {
    /// The field `name` of struct element `i`.
    pub fn field(&self, i: usize, name: &str) -> Option<&MatValue> {
        match self {
            MatValue::Struct { fields, elements } => {
                let f = fields.iter().position(|n| n == name)?;
                elements.get(i)?.get(f)
            }
            _ => None,
        }
    }

    /// The number of elements of a struct or cell array, or of values of a numeric array.
    pub fn len(&self) -> usize {
        match self {
            MatValue::Num(v) => v.len(),
            MatValue::Char(s) => s.len(),
            MatValue::Struct { elements, .. } => elements.len(),
            MatValue::Cell(c) => c.len(),
        }
    }

    /// Whether [`MatValue::len`] is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The single number of a 1x1 numeric array.
    pub(crate) fn scalar(&self) -> Option<f64> {
        match self {
            MatValue::Num(v) if v.len() == 1 => Some(v[0]),
            _ => None,
        }
    }

    /// The text of a character array.
    pub fn text(&self) -> Option<&str> {
        match self {
            MatValue::Char(s) => Some(s),
            _ => None,
        }
    }
}

const MI_INT8: u32 = 1;
const MI_UINT8: u32 = 2;
const MI_INT16: u32 = 3;
const MI_UINT16: u32 = 4;
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;
const MI_SINGLE: u32 = 7;
const MI_DOUBLE: u32 = 9;
const MI_INT64: u32 = 12;
const MI_UINT64: u32 = 13;
const MI_MATRIX: u32 = 14;
const MI_COMPRESSED: u32 = 15;
const MI_UTF8: u32 = 16;

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    big: bool,
}

type Res<T> = Result<T, String>;

impl<'a> Reader<'a> {
    fn u32_at(&self, at: usize) -> Res<u32> {
        let b: [u8; 4] = self
            .data
            .get(at..at + 4)
            .ok_or("truncated file")?
            .try_into()
            .map_err(|_| "truncated file")?;
        Ok(if self.big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    /// The next data element: (type, payload), advancing past its padding.
    fn element(&mut self) -> Res<(u32, &'a [u8])> {
        let tag = self.u32_at(self.pos)?;
        if tag >> 16 != 0 {
            // Small data element: type and size share the first word, data in the second.
            let (ty, n) = (tag & 0xffff, (tag >> 16) as usize);
            if n > 4 {
                return Err("corrupt small data element".into());
            }
            let payload = self
                .data
                .get(self.pos + 4..self.pos + 4 + n)
                .ok_or("truncated file")?;
            self.pos += 8;
            return Ok((ty, payload));
        }
        let n = self.u32_at(self.pos + 4)? as usize;
        let start = self.pos + 8;
        let payload = self.data.get(start..start + n).ok_or("truncated file")?;
        self.pos = start + n.div_ceil(8) * 8;
        // A compressed element is not padded.
        if tag == MI_COMPRESSED {
            self.pos = start + n;
        }
        Ok((tag, payload))
    }

    fn at_end(&self) -> bool {
        self.pos + 8 > self.data.len()
    }
}

fn numbers(ty: u32, bytes: &[u8], big: bool) -> Res<Vec<f64>> {
    macro_rules! conv {
        ($t:ty, $n:expr) => {
            bytes
                .chunks_exact($n)
                .map(|c| {
                    let a: [u8; $n] = c.try_into().unwrap();
                    (if big {
                        <$t>::from_be_bytes(a)
                    } else {
                        <$t>::from_le_bytes(a)
                    }) as f64
                })
                .collect()
        };
    }
    Ok(match ty {
        MI_INT8 => bytes.iter().map(|&b| f64::from(b as i8)).collect(),
        MI_UINT8 | MI_UTF8 => bytes.iter().map(|&b| f64::from(b)).collect(),
        MI_INT16 => conv!(i16, 2),
        MI_UINT16 => conv!(u16, 2),
        MI_INT32 => conv!(i32, 4),
        MI_UINT32 => conv!(u32, 4),
        MI_SINGLE => conv!(f32, 4),
        MI_DOUBLE => conv!(f64, 8),
        MI_INT64 => conv!(i64, 8),
        MI_UINT64 => conv!(u64, 8),
        other => return Err(format!("unsupported numeric data type {other}")),
    })
}

/// Parses the payload of one miMATRIX element.
fn matrix(payload: &[u8], big: bool) -> Res<MatValue> {
    if payload.is_empty() {
        return Ok(MatValue::Num(Vec::new()));
    }
    let mut r = Reader {
        data: payload,
        pos: 0,
        big,
    };
    let (_, flags) = r.element()?;
    let class = *flags
        .get(if big { 3 } else { 0 })
        .ok_or("corrupt array flags")?;
    let (dty, dims) = r.element()?;
    let dims = numbers(dty, dims, big)?;
    let count = dims.iter().product::<f64>() as usize;
    let _name = r.element()?;
    match class {
        1 => {
            let cells = (0..count)
                .map(|_| {
                    let (ty, p) = r.element()?;
                    if ty != MI_MATRIX {
                        return Err("cell element is not an array".to_string());
                    }
                    matrix(p, big)
                })
                .collect::<Res<_>>()?;
            Ok(MatValue::Cell(cells))
        }
        2 => {
            let (lty, len) = r.element()?;
            let len = *numbers(lty, len, big)?
                .first()
                .ok_or("corrupt field name length")? as usize;
            let (_, names) = r.element()?;
            if len == 0 {
                return Err("corrupt field name length".into());
            }
            let fields: Vec<String> = names
                .chunks(len)
                .map(|c| {
                    String::from_utf8_lossy(c)
                        .trim_end_matches('\0')
                        .to_string()
                })
                .filter(|n| !n.is_empty())
                .collect();
            let mut elements = Vec::with_capacity(count);
            for _ in 0..count {
                let mut values = Vec::with_capacity(fields.len());
                for _ in 0..fields.len() {
                    let (ty, p) = r.element()?;
                    if ty != MI_MATRIX {
                        return Err("struct field is not an array".into());
                    }
                    values.push(matrix(p, big)?);
                }
                elements.push(values);
            }
            Ok(MatValue::Struct { fields, elements })
        }
        4 => {
            if r.at_end() {
                return Ok(MatValue::Char(String::new()));
            }
            let (ty, p) = r.element()?;
            let text = if ty == MI_UTF8 {
                String::from_utf8_lossy(p).into_owned()
            } else {
                numbers(ty, p, big)?
                    .into_iter()
                    .map(|c| char::from_u32(c as u32).unwrap_or('\u{fffd}'))
                    .collect()
            };
            Ok(MatValue::Char(text))
        }
        6..=15 => {
            if r.at_end() {
                return Ok(MatValue::Num(Vec::new()));
            }
            let (ty, p) = r.element()?;
            Ok(MatValue::Num(numbers(ty, p, big)?))
        }
        other => Err(format!(
            "unsupported array class {other} (sparse, object or function)"
        )),
    }
}

/// Reads the named top-level variables of a Level 5 MAT file.
pub(crate) fn read_mat(path: &Path) -> Result<BTreeMap<String, MatValue>, DataError> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    parse(&bytes).map_err(|message| DataError::BadFile {
        path: path.to_path_buf(),
        message: format!("not a readable Level 5 MAT file: {message}"),
    })
}

fn parse(bytes: &[u8]) -> Res<BTreeMap<String, MatValue>> {
    if bytes.len() < 128 {
        return Err("shorter than the 128-byte header".into());
    }
    let big = match &bytes[126..128] {
        b"IM" => false,
        b"MI" => true,
        _ => return Err("no endian indicator at byte 126 (a MATLAB v7.3/HDF5 file?)".into()),
    };
    let mut out = BTreeMap::new();
    let mut top = Reader {
        data: &bytes[128..],
        pos: 0,
        big,
    };
    while !top.at_end() {
        let (ty, payload) = top.element()?;
        let inflated;
        let (ty, payload) = if ty == MI_COMPRESSED {
            let mut buf = Vec::new();
            flate2::read::ZlibDecoder::new(payload)
                .read_to_end(&mut buf)
                .map_err(|e| format!("compressed element: {e}"))?;
            inflated = buf;
            let mut inner = Reader {
                data: &inflated,
                pos: 0,
                big,
            };
            inner.element()?
        } else {
            (ty, payload)
        };
        if ty != MI_MATRIX {
            continue;
        }
        let name = variable_name(payload, big)?;
        out.insert(name, matrix(payload, big)?);
    }
    Ok(out)
}

fn variable_name(payload: &[u8], big: bool) -> Res<String> {
    let mut r = Reader {
        data: payload,
        pos: 0,
        big,
    };
    r.element()?;
    r.element()?;
    let (_, name) = r.element()?;
    Ok(String::from_utf8_lossy(name).into_owned())
}
