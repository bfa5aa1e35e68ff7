/**
 * The system calls a sandboxed process may not make (SPEC S3, S7), with their
 * numbers on the two architectures Foya's workers run on. The set follows what
 * Docker's default profile, Codex's Linux sandbox and Anthropic's
 * sandbox-runtime refuse, for the reasons below. Most of them already fail in
 * the sandbox for want of a capability; the filter closes the kernel code
 * behind them too (a bug there is reachable without any capability), and keeps
 * them closed should a capability or a namespace ever be granted by mistake.
 *
 * Numbers: x86_64 from `arch/x86/entry/syscalls/syscall_64.tbl`, arm64 from
 * `include/uapi/asm-generic/unistd.h` (arm64 has no iopl, ioperm, modify_ldt
 * or uselib).
 */
export interface DeniedSyscall {
  name: string;
  x64?: number;
  arm64?: number;
}

export const deniedSyscalls: readonly DeniedSyscall[] = [
  // Reading or steering other processes (the sandbox's own: there are no others to see).
  { name: "ptrace", x64: 101, arm64: 117 },
  { name: "process_vm_readv", x64: 310, arm64: 270 },
  { name: "process_vm_writev", x64: 311, arm64: 271 },
  // The kernel itself: modules, a new kernel, the machine's power, swap, accounting, the kernel log, the clock.
  { name: "init_module", x64: 175, arm64: 105 },
  { name: "finit_module", x64: 313, arm64: 273 },
  { name: "delete_module", x64: 176, arm64: 106 },
  { name: "kexec_load", x64: 246, arm64: 104 },
  { name: "kexec_file_load", x64: 320, arm64: 294 },
  { name: "reboot", x64: 169, arm64: 142 },
  { name: "swapon", x64: 167, arm64: 224 },
  { name: "swapoff", x64: 168, arm64: 225 },
  { name: "acct", x64: 163, arm64: 89 },
  { name: "quotactl", x64: 179, arm64: 60 },
  { name: "syslog", x64: 103, arm64: 116 },
  { name: "vhangup", x64: 153, arm64: 58 },
  { name: "settimeofday", x64: 164, arm64: 170 },
  { name: "clock_settime", x64: 227, arm64: 112 },
  { name: "clock_adjtime", x64: 305, arm64: 266 },
  // Large kernel surfaces that exploits lean on: eBPF, perf, userfaultfd, io_uring (which also makes
  // sockets and opens files without the system calls this filter sees).
  { name: "bpf", x64: 321, arm64: 280 },
  { name: "perf_event_open", x64: 298, arm64: 241 },
  { name: "userfaultfd", x64: 323, arm64: 282 },
  { name: "io_uring_setup", x64: 425, arm64: 425 },
  { name: "io_uring_enter", x64: 426, arm64: 426 },
  { name: "io_uring_register", x64: 427, arm64: 427 },
  // Kernel keyrings are not namespaced: keys would be shared with the host's other users.
  { name: "add_key", x64: 248, arm64: 217 },
  { name: "request_key", x64: 249, arm64: 218 },
  { name: "keyctl", x64: 250, arm64: 219 },
  // Namespaces and mounts: the sandbox is set up before the command starts, and stays as it is.
  { name: "unshare", x64: 272, arm64: 97 },
  { name: "setns", x64: 308, arm64: 268 },
  { name: "mount", x64: 165, arm64: 40 },
  { name: "umount2", x64: 166, arm64: 39 },
  { name: "pivot_root", x64: 155, arm64: 41 },
  { name: "chroot", x64: 161, arm64: 51 },
  { name: "open_tree", x64: 428, arm64: 428 },
  { name: "move_mount", x64: 429, arm64: 429 },
  { name: "fsopen", x64: 430, arm64: 430 },
  { name: "fsconfig", x64: 431, arm64: 431 },
  { name: "fsmount", x64: 432, arm64: 432 },
  { name: "fspick", x64: 433, arm64: 433 },
  { name: "mount_setattr", x64: 442, arm64: 442 },
  // File handles open files by inode number, past every path check (the classic container escape).
  { name: "name_to_handle_at", x64: 303, arm64: 264 },
  { name: "open_by_handle_at", x64: 304, arm64: 265 },
  // x86 only: port I/O, the local descriptor table, old library loading.
  { name: "iopl", x64: 172 },
  { name: "ioperm", x64: 173 },
  { name: "modify_ldt", x64: 154 },
  { name: "uselib", x64: 134 },
];

/**
 * `personality` is allowed only with the values Docker's profile allows
 * (Linux, 32-bit Linux, the 2.6 uname, both, and the query 0xffffffff): other
 * flags turn off address-space randomization and the like.
 */
export const personality = { x64: 135, arm64: 92, allowed: [0x0, 0x8, 0x20000, 0x20008, 0xffffffff] } as const;

/**
 * `clone` may not make namespaces (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC,
 * NEWUSER, NEWPID, NEWNET: the flags in its first argument), and `clone3`,
 * whose flags sit in a struct a filter cannot read, answers ENOSYS so the C
 * library falls back to `clone` (as Docker's profile does). With `unshare` and
 * `setns` refused this keeps a sandbox from making a user namespace of its own
 * even where bwrap was not asked to disable them (a worker that is not root).
 */
export const cloneCalls = { x64: 56, arm64: 220, namespaceFlags: 0x7e020000, clone3: { x64: 435, arm64: 435 } } as const;

/**
 * `socket` and `socketpair` may not make AF_VSOCK sockets (40): vsock is not
 * namespaced, so on a virtual machine it reaches the hypervisor's services
 * whatever the sandbox's network namespace says.
 */
export const socketCalls = { x64: [41, 53], arm64: [198, 199], deniedFamilies: [40] } as const;
