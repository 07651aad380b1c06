//! Shards of one recording run: which fixed part of a run a shard records, and the `shard` object its file
//! carries (`docs/recording-format.md`, "Shards"). A run is numbered in chunks of `chunk_units` cases (or
//! grid keys); shard I of N (1 ≤ I ≤ N) records exactly the chunks c with c mod N = I − 1, so N processes
//! (one per GPU, or one per task of a Slurm job array) share one run, each resumable on its own, and
//! [`crate::merge`] puts the pieces back together.

use serde_json::{json, Value};
use std::fmt;

/// Shard `index` of `count` (both from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    /// 1 ..= count.
    pub index: u64,
    /// The number of shards the run is split into.
    pub count: u64,
}

/// The rule, as the `shard` object states it.
pub const SHARD_RULE: &str = "chunk c belongs to shard (c mod count) + 1";

impl Shard {
    /// Parses `I/N` (1 ≤ I ≤ N).
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("shard {s:?} is not I/N with 1 <= I <= N (e.g. 2/8)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Does this shard record chunk `chunk`?
    pub fn owns(&self, chunk: u64) -> bool {
        chunk % self.count == self.index - 1
    }

    /// The chunks of a run of `chunks` chunks this shard records, in order.
    pub fn chunks(&self, chunks: u64) -> impl Iterator<Item = u64> + '_ {
        (self.index - 1..chunks).step_by(self.count as usize)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a shard's file says about the run it is part of: the `shard` object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardInfo {
    /// Which shard.
    pub shard: Shard,
    /// Units (cases or grid keys) of the whole run.
    pub units: u64,
    /// Units per chunk.
    pub chunk_units: u64,
    /// The chunks this file holds and the rows each contributed, in chunk order.
    pub chunks: Vec<(u64, u64)>,
}

impl ShardInfo {
    /// The number of chunks of the whole run.
    pub fn run_chunks(&self) -> u64 {
        self.units.div_ceil(self.chunk_units.max(1))
    }

    /// The `shard` object.
    pub fn to_json(&self) -> Value {
        json!({
            "index": self.shard.index,
            "count": self.shard.count,
            "rule": SHARD_RULE,
            "units": self.units,
            "chunk_units": self.chunk_units,
            "chunks": self.chunks.iter().map(|(c, r)| json!([c, r])).collect::<Vec<_>>(),
        })
    }

    /// Parses a `shard` object.
    pub fn from_json(v: &Value) -> Result<ShardInfo, String> {
        let num = |k: &str| v.get(k).and_then(Value::as_u64).ok_or_else(|| format!("`shard.{k}` is not a number"));
        let (index, count) = (num("index")?, num("count")?);
        if count == 0 || index == 0 || index > count {
            return Err(format!("`shard` {index}/{count} is not I/N with 1 <= I <= N"));
        }
        let chunks = v
            .get("chunks")
            .and_then(Value::as_array)
            .ok_or("`shard.chunks` is not a list")?
            .iter()
            .map(|c| {
                match c.as_array().map(|a| (a.first().and_then(Value::as_u64), a.get(1).and_then(Value::as_u64))) {
                    Some((Some(c), Some(r))) => Ok((c, r)),
                    _ => Err("`shard.chunks` entries are [chunk, rows]".to_string()),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let chunk_units = num("chunk_units")?;
        if chunk_units == 0 {
            return Err("`shard.chunk_units` is 0".into());
        }
        Ok(ShardInfo { shard: Shard { index, count }, units: num("units")?, chunk_units, chunks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_chunks() {
        let shards: Vec<Shard> = (1..=3).map(|i| Shard { index: i, count: 3 }).collect();
        let mut seen: Vec<u64> = shards.iter().flat_map(|s| s.chunks(10).collect::<Vec<_>>()).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        assert_eq!(shards[1].chunks(10).collect::<Vec<_>>(), [1, 4, 7]);
        assert!(shards[2].owns(5) && !shards[2].owns(6));
        assert_eq!(Shard::parse(" 2/8").unwrap(), Shard { index: 2, count: 8 });
        for bad in ["0/3", "4/3", "1/0", "3", "a/b", ""] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Shard { index: 2, count: 8 }.to_string(), "2/8");
    }

    #[test]
    fn shard_objects_round_trip() {
        let info = ShardInfo { shard: Shard { index: 2, count: 3 }, units: 64, chunk_units: 5, chunks: vec![(1, 3)] };
        assert_eq!(ShardInfo::from_json(&info.to_json()).unwrap(), info);
        assert_eq!(info.run_chunks(), 13);
        assert!(ShardInfo::from_json(&json!({"index": 4, "count": 3})).is_err());
    }
}
