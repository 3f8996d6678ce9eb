//! `splashc run`.

pub fn run(args: &crate::RunArgs) -> u8 {
    let _ = args;
    eprintln!("splashc run: not available yet");
    2
}
