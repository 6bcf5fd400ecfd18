//! Meta data against the fixtures: every entry of every type, small and large, and edits
//! (an overwritten key keeps its index, a new key is appended).

use super::fixtures::*;
use crate::sources::ptex::*;
use serde_json::Value;

fn check_value(value: &MetaValue, j: &Value, ctx: &str) {
    let numbers = |v: &Value| list(v).clone();
    match value {
        MetaValue::String(s) => assert_eq!(s, j.as_str().unwrap(), "{ctx}"),
        MetaValue::Int8(v) => assert_eq!(
            v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>(),
            numbers(j).iter().map(sint).collect::<Vec<_>>(),
            "{ctx}"
        ),
        MetaValue::Int16(v) => assert_eq!(
            v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>(),
            numbers(j).iter().map(sint).collect::<Vec<_>>(),
            "{ctx}"
        ),
        MetaValue::Int32(v) => assert_eq!(
            v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>(),
            numbers(j).iter().map(sint).collect::<Vec<_>>(),
            "{ctx}"
        ),
        MetaValue::Float(v) => {
            let expected: Vec<u32> = numbers(j).iter().map(|x| f32_of(x).to_bits()).collect();
            assert_eq!(
                v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                expected,
                "{ctx}"
            );
        }
        MetaValue::Double(v) => {
            let expected: Vec<u64> = numbers(j)
                .iter()
                .map(|x| x.as_f64().unwrap().to_bits())
                .collect();
            assert_eq!(
                v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                expected,
                "{ctx}"
            );
        }
    }
}

#[test]
fn every_meta_data_entry_matches() {
    let mut types = std::collections::BTreeSet::new();
    let mut storages = std::collections::BTreeSet::new();
    for fx in all() {
        let f = &fx.file;
        let jm = list(&fx.json["metadata"]);
        assert_eq!(f.meta().len(), jm.len(), "{}", fx.name);
        for j in jm {
            let index = int(&j["index"]) as usize;
            let e = &f.meta()[index];
            let ctx = format!("{} meta {index} {}", fx.name, e.key);
            assert_eq!(e.key, j["key"].as_str().unwrap(), "{ctx}");
            assert_eq!(f.meta_index(&e.key), Some(index), "{ctx}");
            let t = match e.meta_type {
                MetaType::String => "string",
                MetaType::Int8 => "int8",
                MetaType::Int16 => "int16",
                MetaType::Int32 => "int32",
                MetaType::Float => "float",
                MetaType::Double => "double",
            };
            assert_eq!(t, j["type"], "{ctx}");
            assert_eq!(u64::from(e.data_size), int(&j["datasize_bytes"]), "{ctx}");
            let storage = match e.storage {
                MetaStorage::Small => "metadata",
                MetaStorage::Large => "large_metadata",
                MetaStorage::Edit => "edit",
            };
            assert_eq!(storage, j["storage"], "{ctx}");
            let value = f.meta_value(index).unwrap();
            let count = match &value {
                MetaValue::String(_) => 1,
                MetaValue::Int8(v) => v.len(),
                MetaValue::Int16(v) => v.len(),
                MetaValue::Int32(v) => v.len(),
                MetaValue::Float(v) => v.len(),
                MetaValue::Double(v) => v.len(),
            };
            assert_eq!(count as u64, int(&j["count"]), "{ctx}");
            check_value(&value, &j["value"], &ctx);
            // A second read (of a large value: from memory) gives the same.
            assert_eq!(f.meta_value(index).unwrap(), value, "{ctx}");
            types.insert(t);
            storages.insert(storage);
        }
    }
    assert_eq!(types.len(), 6, "every meta data type is covered: {types:?}");
    assert_eq!(storages.len(), 3, "every storage is covered: {storages:?}");
}

#[test]
fn large_meta_data_lies_where_the_layout_says() {
    let mut n = 0;
    for fx in all() {
        for j in list(&fx.json["layout"]["large_metadata"]) {
            let index = fx.file.meta_index(j["key"].as_str().unwrap()).unwrap();
            let e = &fx.file.meta()[index];
            assert_eq!(e.storage, MetaStorage::Large);
            assert_eq!(
                e.large_span(),
                Some((int(&j["offset"]), int(&j["zipsize"]) as u32))
            );
            assert_eq!(u64::from(e.data_size), int(&j["datasize"]));
            n += 1;
        }
    }
    assert_eq!(n, 3);
}

#[test]
fn a_file_without_meta_data_has_none() {
    let fx = Fixture::load("quad_uint8_nomip");
    assert!(fx.file.meta().is_empty());
    assert_eq!(fx.file.meta_index("fixture_string"), None);
}
