//! `splashc emit`.

pub fn run(args: &crate::EmitArgs) -> u8 {
    let _ = args;
    eprintln!("splashc emit: not available yet");
    2
}
