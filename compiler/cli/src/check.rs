//! `splashc check`.

pub fn run(args: &crate::CheckArgs) -> u8 {
    let _ = args;
    eprintln!("splashc check: not available yet");
    2
}
