/// A long-lived helper (an S3 server, a PgBouncer daemon) started while other tests run inherits every open
/// descriptor of the test process, the write ends of other tests' pipes among them, and keeps them open: a
/// test reading its child's output to the end then waits for as long as the helper lives. (Foundation's
/// pipes are not close-on-exec here, and glibc's posix_spawn_file_actions_addclosefrom_np is not visible to
/// Swift.) So helpers start through bash, which closes every descriptor above 2 before it becomes the helper.
/// Only with posix_spawn: Foundation's `Process` watches its child through an inherited descriptor, and a
/// child that closes it leaves the process unable to see any child end.
public enum InheritedDescriptors {
    public static func closed(_ command: [String]) -> [String] {
        let script = #"for fd in /proc/$$/fd/*; do fd=${fd##*/}; if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done; exec "$@""#
        return ["/bin/bash", "-c", script, "bash"] + command
    }
}
