//! Numbers as decimal text without `core::fmt`, whose machinery (padding,
//! width, the `Write` calls) cost a request hundreds of instructions per
//! number written (BENCHMARKS.md, "Request text without the formatter").

/// The decimal digits of `n`, written at the end of `buf`.
pub(crate) fn decimal_digits(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut start = buf.len();
    loop {
        start -= 1;
        buf[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[start..]).expect("decimal digits are ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_read_as_display_writes_them() {
        let mut buf = [0u8; 20];
        for n in [
            0,
            7,
            10,
            99,
            100,
            8080,
            65535,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            assert_eq!(decimal_digits(n, &mut buf), n.to_string());
        }
    }
}
