//! A BERT encoder's weights read out of its ONNX export, named as the PyTorch module names
//! them, so the same candle model runs them as it runs a `model.safetensors`.
//!
//! An export keeps most parameters under their module names (`encoder.layer.0.attention.
//! output.LayerNorm.weight`), but a linear layer becomes a `MatMul` by an anonymous constant
//! (`onnx::MatMul_1234`, stored input × output) followed by an `Add` of the named bias. Each
//! such weight is found through the bias it is added to, and transposed back.
//!
//! Only the few protobuf fields this needs are declared; the file is mapped, not read, and
//! the tensors are copied out of the mapping before it goes.

use std::{collections::HashMap, path::Path};

use candle_core::{Device, Tensor};
use prost::Message;

/// `onnx.ModelProto`: only the graph.
#[derive(Clone, PartialEq, Message)]
struct ModelProto {
    #[prost(message, optional, tag = "7")]
    graph: Option<GraphProto>,
}

/// `onnx.GraphProto`: its nodes and constants.
#[derive(Clone, PartialEq, Message)]
struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    node: Vec<NodeProto>,
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<TensorProto>,
}

/// `onnx.NodeProto`: what it computes from what.
#[derive(Clone, PartialEq, Message)]
struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    output: Vec<String>,
    #[prost(string, tag = "4")]
    op_type: String,
}

/// `onnx.TensorProto`: a constant, its values either packed little-endian in `raw_data` or
/// listed in `float_data`.
#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    data_type: i32,
    #[prost(float, repeated, tag = "4")]
    float_data: Vec<f32>,
    #[prost(string, tag = "8")]
    name: String,
    #[prost(bytes = "bytes", tag = "9")]
    raw_data: bytes::Bytes,
}

/// `TensorProto.DataType.FLOAT`.
const FLOAT: i32 = 1;

impl TensorProto {
    /// The constant as an f32 tensor; `None` when it holds another type.
    fn to_tensor(&self, device: &Device) -> Result<Option<Tensor>, String> {
        if self.data_type != FLOAT {
            return Ok(None);
        }
        let dims: Vec<usize> = self.dims.iter().map(|&d| d.max(0) as usize).collect();
        let values: Vec<f32> = if self.raw_data.is_empty() {
            self.float_data.clone()
        } else {
            self.raw_data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        };
        if values.len() != dims.iter().product::<usize>() {
            return Err(format!(
                "{} holds {} values for the shape {dims:?}",
                self.name,
                values.len()
            ));
        }
        Tensor::from_vec(values, dims, device)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

/// The export's parameters by module name: the named constants as they are, and each linear
/// layer's weight (`<layer>.weight`, output × input) recovered from its `MatMul`.
pub fn bert_tensors(path: &Path, device: &Device) -> Result<HashMap<String, Tensor>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: read-only, and only while the tensors are copied out; the file is cairn's own
    // checksummed copy, replaced only by renaming a new one into place.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
    let model = ModelProto::decode(bytes::Bytes::from_owner(map))
        .map_err(|e| format!("{} is not an ONNX model: {e}", path.display()))?;
    let graph = model
        .graph
        .ok_or_else(|| format!("{} has no graph", path.display()))?;
    let constants: HashMap<&str, &TensorProto> = graph
        .initializer
        .iter()
        .map(|t| (t.name.as_str(), t))
        .collect();
    let mut out = HashMap::new();
    for t in &graph.initializer {
        if t.name.starts_with("onnx::") {
            continue;
        }
        if let Some(tensor) = t.to_tensor(device)? {
            out.insert(t.name.clone(), tensor);
        }
    }
    // MatMul output → the constant it multiplies by.
    let weights: HashMap<&str, &TensorProto> = graph
        .node
        .iter()
        .filter(|n| n.op_type == "MatMul" && n.input.len() == 2 && n.output.len() == 1)
        .filter_map(|n| Some((n.output[0].as_str(), *constants.get(n.input[1].as_str())?)))
        .collect();
    for add in graph.node.iter().filter(|n| n.op_type == "Add") {
        let [a, b] = add.input.as_slice() else {
            continue;
        };
        let (product, bias) = match (weights.get(a.as_str()), weights.get(b.as_str())) {
            (Some(w), None) => (w, b),
            (None, Some(w)) => (w, a),
            _ => continue,
        };
        let Some(layer) = bias.strip_suffix(".bias") else {
            continue;
        };
        if !constants.contains_key(bias.as_str()) {
            continue;
        }
        let Some(w) = product.to_tensor(device)? else {
            continue;
        };
        let w = w
            .t()
            .and_then(|w| w.contiguous())
            .map_err(|e| e.to_string())?;
        out.insert(format!("{layer}.weight"), w);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constant(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
        TensorProto {
            dims: dims.to_vec(),
            data_type: FLOAT,
            float_data: Vec::new(),
            name: name.into(),
            raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    fn node(op: &str, input: &[&str], output: &str) -> NodeProto {
        NodeProto {
            input: input.iter().map(|s| s.to_string()).collect(),
            output: vec![output.into()],
            op_type: op.into(),
        }
    }

    #[test]
    fn a_linear_layer_is_found_through_its_bias_and_transposed() {
        // x · W (2 inputs × 3 outputs) + b, as an export writes `dense`.
        let graph = GraphProto {
            node: vec![
                node("MatMul", &["x", "onnx::MatMul_7"], "m"),
                node("Add", &["dense.bias", "m"], "y"),
                node("Add", &["y", "y"], "z"),
            ],
            initializer: vec![
                constant("onnx::MatMul_7", &[2, 3], &[1., 2., 3., 4., 5., 6.]),
                constant("dense.bias", &[3], &[0.5, 0.5, 0.5]),
                constant("LayerNorm.weight", &[3], &[1., 1., 1.]),
            ],
        };
        let bytes = ModelProto { graph: Some(graph) }.encode_to_vec();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.onnx");
        std::fs::write(&path, bytes).unwrap();
        let t = bert_tensors(&path, &Device::Cpu).expect("read");
        let mut names: Vec<&str> = t.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["LayerNorm.weight", "dense.bias", "dense.weight"]);
        let w = t["dense.weight"].to_vec2::<f32>().unwrap();
        assert_eq!(w, vec![vec![1., 4.], vec![2., 5.], vec![3., 6.]]);
    }

    #[test]
    fn a_file_that_is_not_onnx_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.onnx");
        std::fs::write(&path, b"\xff\xff\xff\xff not protobuf").unwrap();
        let err = bert_tensors(&path, &Device::Cpu).expect_err("not a model");
        assert!(err.contains("is not an ONNX model"), "{err}");
    }
}
