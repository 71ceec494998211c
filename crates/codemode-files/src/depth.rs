//! Depth-limited JSON values: a `serde_json::Value` built by a visitor that refuses nesting past
//! [`MAX_DEPTH`] before the parser recurses into it, so a 20,000-deep config is an error, not a
//! stack overflow (docs/threat-model.md, "Files an operator names").

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Number, Value};
use std::fmt;

/// The deepest nesting of arrays and objects [`LimitedValue`] accepts: 127, the deepest
/// serde_json's recursion limit (128) lets through, so a file means the same whether it is read
/// as JSON or as JSON5.
pub const MAX_DEPTH: usize = 127;

/// A `serde_json::Value` at most [`MAX_DEPTH`] arrays/objects deep, deserialisable from any
/// self-describing format (JSON5 through `json5::from_str::<LimitedValue>`). Deeper input fails
/// with the custom error `nested deeper than 127 levels` (the format adds where, e.g. JSON5's
/// `at line 1 column 128`) as soon as the parser reaches the 128th level, so neither the parse
/// nor dropping the value recurses further. Numbers that are not finite (JSON5's `NaN`,
/// `Infinity`) become `null`, as in `serde_json::Value`.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitedValue(pub Value);

impl<'de> Deserialize<'de> for LimitedValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Level { depth: 0 }
            .deserialize(deserializer)
            .map(LimitedValue)
    }
}

/// The value at `depth` containers below the top.
#[derive(Clone, Copy)]
struct Level {
    depth: usize,
}

impl Level {
    /// The level of a container's elements, or the error when the container is one too many.
    fn inner<E: de::Error>(self) -> Result<Level, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format_args!(
                "nested deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(Level {
            depth: self.depth + 1,
        })
    }
}

impl<'de> DeserializeSeed<'de> for Level {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Level {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(inner)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn accepts_max_depth_and_refuses_one_more() {
        let ok: LimitedValue = json5::from_str(&nested(MAX_DEPTH)).unwrap();
        // serde_json draws the same line with its own recursion limit.
        assert_eq!(
            serde_json::from_str::<Value>(&nested(MAX_DEPTH)).unwrap(),
            ok.0
        );
        assert_eq!(
            serde_json::from_str::<Value>(&nested(MAX_DEPTH + 1))
                .unwrap_err()
                .to_string(),
            "recursion limit exceeded at line 1 column 128"
        );
        let mut v = &ok.0;
        for _ in 0..MAX_DEPTH {
            v = &v[0];
        }
        assert_eq!(v, &json!(1));
        let err = json5::from_str::<LimitedValue>(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "nested deeper than 127 levels at line 1 column 128"
        );
    }

    #[test]
    fn json5_is_limited_without_overflowing_the_stack() {
        // 100,000 nested arrays and 20,000 nested objects: the issue's reproducers. Run on a
        // small thread so a recursion past the limit would overflow here, not pass by luck.
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let arrays = nested(100_000);
                let objects = format!("{}1{}", "{a:".repeat(20_000), "}".repeat(20_000));
                (
                    json5::from_str::<LimitedValue>(&arrays)
                        .unwrap_err()
                        .to_string(),
                    json5::from_str::<LimitedValue>(&objects)
                        .unwrap_err()
                        .to_string(),
                )
            })
            .unwrap();
        let (arrays, objects) = handle.join().unwrap();
        assert_eq!(arrays, "nested deeper than 127 levels at line 1 column 128");
        assert_eq!(
            objects,
            "nested deeper than 127 levels at line 1 column 382"
        );
    }

    #[test]
    fn keeps_every_json5_value_kind() {
        let v: LimitedValue = json5::from_str(
            "{a: [1, -2, 0x10, 1.5, NaN, 'x', \"y\", true, null], b: {}, 'c d': []}",
        )
        .unwrap();
        assert_eq!(
            v.0,
            json!({"a": [1, -2, 16, 1.5, null, "x", "y", true, null], "b": {}, "c d": []})
        );
        assert_eq!(
            serde_json::to_string(&v.0).unwrap(),
            r#"{"a":[1,-2,16,1.5,null,"x","y",true,null],"b":{},"c d":[]}"#
        );
    }
}
