//! Scalars out of summary values: TensorFlow 1's `simple_value`, or TensorFlow 2's one-element
//! tensor of the `scalars` plugin.

use crate::proto::{DataType, Kind, TensorProto, Value};

/// The plugin name of scalar series in a value's metadata.
const SCALARS_PLUGIN: &str = "scalars";

/// One point of a scalar series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The training step (the event's `step`).
    pub step: i64,
    /// When it was written, in seconds since the Unix epoch (the event's `wall_time`).
    pub wall_time: f64,
    /// The value, widened to `f64` whatever type was written.
    pub value: f64,
}

/// The plugin a value names in its metadata, if it names one.
pub fn plugin_of(value: &Value) -> Option<&str> {
    let name = &value.metadata.as_ref()?.plugin_data.as_ref()?.plugin_name;
    (!name.is_empty()).then_some(name.as_str())
}

/// The scalar `value` holds, if it holds one. `plugin` is the plugin of its series (named by this
/// value's metadata or an earlier one of the same tag): a tensor is read only for the `scalars`
/// plugin or when no plugin is known, and only if it has exactly one numeric element.
pub fn scalar_of(value: &Value, plugin: Option<&str>) -> Option<f64> {
    match value.kind.as_ref()? {
        Kind::SimpleValue(simple) => Some(f64::from(*simple)),
        Kind::Tensor(tensor) if plugin.is_none_or(|name| name == SCALARS_PLUGIN) => {
            tensor_scalar(tensor)
        }
        Kind::Tensor(_) => None,
    }
}

/// The single element of a one-element numeric tensor, from `tensor_content` or the typed field.
#[expect(
    clippy::cast_precision_loss,
    reason = "an i64 scalar is plotted as f64 like any other value"
)]
fn tensor_scalar(tensor: &TensorProto) -> Option<f64> {
    // One element: rank 0, or every dimension of size 1.
    let dims = tensor
        .tensor_shape
        .as_ref()
        .map_or(&[][..], |shape| &shape.dim[..]);
    if dims.iter().any(|dim| dim.size != 1) {
        return None;
    }
    let content = tensor.tensor_content.as_slice();
    let raw = !content.is_empty();
    match DataType::try_from(tensor.dtype).ok()? {
        DataType::Float if raw => Some(f64::from(f32::from_le_bytes(content.try_into().ok()?))),
        DataType::Float => tensor.float_val.first().copied().map(f64::from),
        DataType::Double if raw => Some(f64::from_le_bytes(content.try_into().ok()?)),
        DataType::Double => tensor.double_val.first().copied(),
        DataType::Half if raw => Some(f64::from(half_to_f32(u16::from_le_bytes(
            content.try_into().ok()?,
        )))),
        DataType::Half => Some(f64::from(half_to_f32(low_16(*tensor.half_val.first()?)))),
        DataType::Bfloat16 if raw => Some(f64::from(bfloat16_to_f32(u16::from_le_bytes(
            content.try_into().ok()?,
        )))),
        DataType::Bfloat16 => Some(f64::from(bfloat16_to_f32(low_16(
            *tensor.half_val.first()?,
        )))),
        DataType::Int32 if raw => Some(f64::from(i32::from_le_bytes(content.try_into().ok()?))),
        DataType::Int16 if raw => Some(f64::from(i16::from_le_bytes(content.try_into().ok()?))),
        DataType::Int8 if raw => Some(f64::from(i8::from_le_bytes(content.try_into().ok()?))),
        DataType::Uint8 if raw => Some(f64::from(u8::from_le_bytes(content.try_into().ok()?))),
        DataType::Int32 | DataType::Int16 | DataType::Int8 | DataType::Uint8 => {
            tensor.int_val.first().copied().map(f64::from)
        }
        DataType::Int64 if raw => Some(i64::from_le_bytes(content.try_into().ok()?) as f64),
        DataType::Int64 => tensor.int64_val.first().map(|&int| int as f64),
        DataType::Invalid => None,
    }
}

/// The 16-bit pattern `half_val` keeps in the low bits of an `int32`.
fn low_16(int: i32) -> u16 {
    (int & 0xffff) as u16
}

/// An IEEE 754 half-precision float, widened exactly.
fn half_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = (bits >> 10) & 0x1f;
    let mantissa = bits & 0x3ff;
    match exponent {
        // Zero and subnormals: mantissa × 2⁻²⁴.
        0 => {
            let magnitude = f32::from(mantissa) * f32::from_bits(0x3380_0000);
            if sign == 0 { magnitude } else { -magnitude }
        }
        // Infinities and NaNs.
        0x1f => f32::from_bits(sign | 0x7f80_0000 | (u32::from(mantissa) << 13)),
        // Normal numbers: rebias the exponent from 15 to 127.
        _ => f32::from_bits(
            sign | ((u32::from(exponent) + 127 - 15) << 23) | (u32::from(mantissa) << 13),
        ),
    }
}

/// A bfloat16: the high 16 bits of an `f32`.
fn bfloat16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Dim, PluginData, SummaryMetadata, TensorShapeProto};

    fn tensor_value(tensor: TensorProto) -> Value {
        Value {
            tag: "loss".into(),
            metadata: None,
            kind: Some(Kind::Tensor(tensor)),
        }
    }

    fn tensor(dtype: DataType) -> TensorProto {
        TensorProto {
            dtype: dtype as i32,
            ..TensorProto::default()
        }
    }

    #[test]
    fn simple_values_are_scalars_whatever_the_plugin() {
        let value = Value {
            tag: "loss".into(),
            metadata: None,
            kind: Some(Kind::SimpleValue(0.25)),
        };
        assert_eq!(scalar_of(&value, None), Some(0.25));
        assert_eq!(scalar_of(&value, Some("histograms")), Some(0.25));
    }

    #[test]
    fn scalar_tensors_in_every_numeric_form() {
        let cases = [
            (
                TensorProto {
                    float_val: vec![0.5],
                    ..tensor(DataType::Float)
                },
                0.5,
            ),
            (
                TensorProto {
                    tensor_content: 0.75_f32.to_le_bytes().to_vec(),
                    ..tensor(DataType::Float)
                },
                0.75,
            ),
            (
                TensorProto {
                    double_val: vec![0.1],
                    ..tensor(DataType::Double)
                },
                0.1,
            ),
            (
                TensorProto {
                    tensor_content: 0.1_f64.to_le_bytes().to_vec(),
                    ..tensor(DataType::Double)
                },
                0.1,
            ),
            // 1.5 in half precision is 0x3e00.
            (
                TensorProto {
                    half_val: vec![0x3e00],
                    ..tensor(DataType::Half)
                },
                1.5,
            ),
            (
                TensorProto {
                    tensor_content: 0x3e00_u16.to_le_bytes().to_vec(),
                    ..tensor(DataType::Half)
                },
                1.5,
            ),
            // -2.0 in half precision is 0xc000.
            (
                TensorProto {
                    half_val: vec![0xc000],
                    ..tensor(DataType::Half)
                },
                -2.0,
            ),
            (
                TensorProto {
                    half_val: vec![0x3fc0],
                    ..tensor(DataType::Bfloat16)
                },
                1.5,
            ),
            (
                TensorProto {
                    int_val: vec![-3],
                    ..tensor(DataType::Int32)
                },
                -3.0,
            ),
            (
                TensorProto {
                    tensor_content: 42_i64.to_le_bytes().to_vec(),
                    ..tensor(DataType::Int64)
                },
                42.0,
            ),
            (
                TensorProto {
                    int64_val: vec![7],
                    tensor_shape: Some(TensorShapeProto {
                        dim: vec![Dim { size: 1 }],
                    }),
                    ..tensor(DataType::Int64)
                },
                7.0,
            ),
        ];
        for (tensor, expected) in cases {
            let value = tensor_value(tensor.clone());
            assert_eq!(scalar_of(&value, None), Some(expected), "{tensor:?}");
            assert_eq!(
                scalar_of(&value, Some("scalars")),
                Some(expected),
                "{tensor:?}"
            );
        }
    }

    #[test]
    fn half_precision_edge_values() {
        assert_eq!(half_to_f32(0x0000).to_bits(), 0.0_f32.to_bits());
        assert_eq!(half_to_f32(0x8000).to_bits(), (-0.0_f32).to_bits());
        assert_eq!(half_to_f32(0x0001).to_bits(), 2.0_f32.powi(-24).to_bits());
        assert_eq!(half_to_f32(0x7bff).to_bits(), 65504.0_f32.to_bits());
        assert_eq!(half_to_f32(0x7c00).to_bits(), f32::INFINITY.to_bits());
        assert_eq!(half_to_f32(0xfc00).to_bits(), f32::NEG_INFINITY.to_bits());
        assert!(half_to_f32(0x7e00).is_nan());
        assert_eq!(half_to_f32(0x3c00).to_bits(), 1.0_f32.to_bits());
    }

    #[test]
    fn non_scalars_are_skipped() {
        let two_elements = TensorProto {
            float_val: vec![1.0, 2.0],
            tensor_shape: Some(TensorShapeProto {
                dim: vec![Dim { size: 2 }],
            }),
            ..tensor(DataType::Float)
        };
        let wrong_content_length = TensorProto {
            tensor_content: vec![0; 3],
            ..tensor(DataType::Float)
        };
        let empty = tensor(DataType::Float);
        let unknown_dtype = TensorProto {
            dtype: 7, // DT_STRING
            ..TensorProto::default()
        };
        for tensor in [two_elements, wrong_content_length, empty, unknown_dtype] {
            assert_eq!(
                scalar_of(&tensor_value(tensor.clone()), None),
                None,
                "{tensor:?}"
            );
        }
        let histogram_plugin = tensor_value(TensorProto {
            float_val: vec![1.0],
            ..tensor(DataType::Float)
        });
        assert_eq!(scalar_of(&histogram_plugin, Some("histograms")), None);
        let nothing = Value {
            tag: "image".into(),
            metadata: None,
            kind: None,
        };
        assert_eq!(scalar_of(&nothing, None), None);
    }

    #[test]
    fn the_plugin_comes_from_the_metadata() {
        let mut value = tensor_value(tensor(DataType::Float));
        assert_eq!(plugin_of(&value), None);
        value.metadata = Some(SummaryMetadata { plugin_data: None });
        assert_eq!(plugin_of(&value), None);
        value.metadata = Some(SummaryMetadata {
            plugin_data: Some(PluginData {
                plugin_name: "scalars".into(),
            }),
        });
        assert_eq!(plugin_of(&value), Some("scalars"));
    }
}
