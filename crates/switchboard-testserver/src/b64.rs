//! Base64 for the test server (it has no base64 dependency): URL-safe
//! encoding without padding, and decoding of either alphabet with or
//! without padding.

const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// URL-safe base64 without padding.
pub fn encode_url(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(URL_SAFE[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Standard base64 with padding (what MCP's `blob` fields hold).
pub fn encode(data: &[u8]) -> String {
    let mut out: String = encode_url(data)
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

/// Standard or URL-safe base64, padding optional; `None` on any other byte.
pub fn decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_and_reads_both_alphabets() {
        for n in 0..7u8 {
            let data: Vec<u8> = (0..n).map(|i| i.wrapping_mul(97)).collect();
            assert_eq!(super::decode(&super::encode_url(&data)).unwrap(), data);
        }
        assert_eq!(super::encode_url(b"\xfb\xff"), "-_8");
        assert_eq!(super::encode(b"\xfb\xff"), "+/8=");
        assert_eq!(super::encode(b"abcd"), "YWJjZA==");
        assert_eq!(super::decode("+/8=").unwrap(), b"\xfb\xff");
        assert_eq!(super::decode("-_8").unwrap(), b"\xfb\xff");
        assert!(super::decode("a b").is_none());
    }
}
