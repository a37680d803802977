//! The part of TensorFlow's protocol buffer messages that scalar curves need, declared with
//! `prost`'s derive macros instead of generated from the `.proto` files.
//!
//! Each item names the message or field it mirrors in TensorFlow's
//! `tensorflow/core/util/event.proto`, `tensorflow/core/framework/summary.proto`,
//! `tensor.proto`, `tensor_shape.proto` and `types.proto` (package `tensorflow`), with the same
//! field numbers and wire types. Fields left out (graphs, images, histograms, audio, session logs,
//! strings, complex numbers...) are skipped by the decoder as unknown fields, so a record that
//! holds them still decodes.

/// One record of an event file: mirrors `tensorflow.Event`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    /// When the event was written, in seconds since the Unix epoch: `double wall_time = 1`.
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    /// The training step the event belongs to: `int64 step = 2`.
    #[prost(int64, tag = "2")]
    pub step: i64,
    /// What the event holds: the `oneof what` (only the members declared in [`What`]).
    #[prost(oneof = "What", tags = "3, 5")]
    pub what: Option<What>,
}

/// The members of `tensorflow.Event`'s `oneof what` that are read; the others (graphs, log
/// messages, session logs, run metadata) decode as `None`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum What {
    /// The first record of every file, naming the format (`brain.Event:2`):
    /// `string file_version = 3`.
    #[prost(string, tag = "3")]
    FileVersion(String),
    /// Named values at this step: `Summary summary = 5`.
    #[prost(message, tag = "5")]
    Summary(Summary),
}

/// A set of named values written at one step: mirrors `tensorflow.Summary`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    /// The values: `repeated Value value = 1`.
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<Value>,
}

/// One named value of a summary: mirrors `tensorflow.Summary.Value`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    /// The series the value belongs to, such as `loss` or `epoch_accuracy`: `string tag = 1`.
    #[prost(string, tag = "1")]
    pub tag: String,
    /// Which plugin the series is for: `SummaryMetadata metadata = 9`. Writers may set it only on
    /// the first value of each tag in a file.
    #[prost(message, optional, tag = "9")]
    pub metadata: Option<SummaryMetadata>,
    /// The value itself: the `oneof value` (only the members declared in [`Kind`]).
    #[prost(oneof = "Kind", tags = "2, 8")]
    pub kind: Option<Kind>,
}

/// The members of `tensorflow.Summary.Value`'s `oneof value` that are read; the others (images,
/// histograms, audio, old-style histograms) decode as `None`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Kind {
    /// A scalar as TensorFlow 1 writes it (`tf.compat.v1.summary.scalar`):
    /// `float simple_value = 2`.
    #[prost(float, tag = "2")]
    SimpleValue(f32),
    /// Any tensor, as TensorFlow 2's summary ops write every value, scalars included:
    /// `TensorProto tensor = 8`.
    #[prost(message, tag = "8")]
    Tensor(TensorProto),
}

/// What a series is for: mirrors `tensorflow.SummaryMetadata` (only `plugin_data`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SummaryMetadata {
    /// The plugin that reads the series: `PluginData plugin_data = 1`.
    #[prost(message, optional, tag = "1")]
    pub plugin_data: Option<PluginData>,
}

/// The plugin of a series: mirrors `tensorflow.SummaryMetadata.PluginData` (only `plugin_name`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PluginData {
    /// The plugin's name; scalars are `scalars`: `string plugin_name = 1`.
    #[prost(string, tag = "1")]
    pub plugin_name: String,
}

/// A tensor's type, shape and elements: mirrors `tensorflow.TensorProto` (the numeric fields).
///
/// Elements are either all in `tensor_content` (little-endian, row-major) or in the repeated field
/// that matches `dtype`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// The element type, a [`DataType`]: `DataType dtype = 1`.
    #[prost(enumeration = "DataType", tag = "1")]
    pub dtype: i32,
    /// The dimensions; absent or empty for a scalar: `TensorShapeProto tensor_shape = 2`.
    #[prost(message, optional, tag = "2")]
    pub tensor_shape: Option<TensorShapeProto>,
    /// The elements as raw little-endian bytes: `bytes tensor_content = 4`.
    #[prost(bytes = "vec", tag = "4")]
    pub tensor_content: Vec<u8>,
    /// `DT_FLOAT` elements: `repeated float float_val = 5` (packed).
    #[prost(float, repeated, tag = "5")]
    pub float_val: Vec<f32>,
    /// `DT_DOUBLE` elements: `repeated double double_val = 6` (packed).
    #[prost(double, repeated, tag = "6")]
    pub double_val: Vec<f64>,
    /// `DT_INT32` (and narrower integer) elements: `repeated int32 int_val = 7` (packed).
    #[prost(int32, repeated, tag = "7")]
    pub int_val: Vec<i32>,
    /// `DT_INT64` elements: `repeated int64 int64_val = 10` (packed).
    #[prost(int64, repeated, tag = "10")]
    pub int64_val: Vec<i64>,
    /// `DT_HALF` and `DT_BFLOAT16` elements, each 16-bit pattern in the low bits of an `int32`:
    /// `repeated int32 half_val = 13` (packed).
    #[prost(int32, repeated, tag = "13")]
    pub half_val: Vec<i32>,
}

/// A tensor's dimensions: mirrors `tensorflow.TensorShapeProto` (only `dim`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// The dimensions, outermost first; none for a scalar: `repeated Dim dim = 2`.
    #[prost(message, repeated, tag = "2")]
    pub dim: Vec<Dim>,
}

/// One dimension of a tensor: mirrors `tensorflow.TensorShapeProto.Dim` (only `size`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dim {
    /// The number of elements along it; -1 when unknown: `int64 size = 1`.
    #[prost(int64, tag = "1")]
    pub size: i64,
}

/// A tensor element type: mirrors the numeric members of `tensorflow.DataType` (`types.proto`),
/// with the same numbers. Other numbers stay as they are in [`TensorProto::dtype`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum DataType {
    /// `DT_INVALID = 0`: not set.
    Invalid = 0,
    /// `DT_FLOAT = 1`: 32-bit IEEE float.
    Float = 1,
    /// `DT_DOUBLE = 2`: 64-bit IEEE float.
    Double = 2,
    /// `DT_INT32 = 3`.
    Int32 = 3,
    /// `DT_UINT8 = 4`.
    Uint8 = 4,
    /// `DT_INT16 = 5`.
    Int16 = 5,
    /// `DT_INT8 = 6`.
    Int8 = 6,
    /// `DT_INT64 = 9`.
    Int64 = 9,
    /// `DT_BFLOAT16 = 14`: a 32-bit float truncated to its high 16 bits.
    Bfloat16 = 14,
    /// `DT_HALF = 19`: 16-bit IEEE float.
    Half = 19,
}
