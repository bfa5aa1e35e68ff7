import { asAnotherUser } from "./wrappers.js";

/** Programs that delete permanently (SPEC F4); `find -delete`, `git clean` and copiers' options are checked apart. */
export const permanentDeleters: ReadonlySet<string> = new Set(["rm", "unlink", "shred", "srm", "wipe"]);

const disks = "changes disks or file systems";
const processes = "stops processes";
const machine = "stops or restarts the machine";
const services = "controls system services";
const firewall = "changes the firewall";
const schedule = "schedules commands to run later";
const system = "changes the system configuration";
const accounts = "changes user accounts";
const containers = "controls containers, with root-equivalent access";

/** Dangerous whatever their arguments; the value says why. */
export const dangerousPrograms: ReadonlyMap<string, string> = new Map([
  ["su", asAnotherUser],
  ["dd", "writes raw devices and files"],
  ...[
    "fdisk",
    "sfdisk",
    "parted",
    "gdisk",
    "wipefs",
    "mkswap",
    "swapon",
    "swapoff",
    "losetup",
    "cryptsetup",
    "mount",
    "umount",
    "fsck",
    "tune2fs",
    "debugfs",
  ].map((name) => [name, disks] as const),
  ...["kill", "pkill", "killall", "skill", "xkill"].map((name) => [name, processes] as const),
  ...["reboot", "shutdown", "halt", "poweroff", "init", "telinit"].map((name) => [name, machine] as const),
  ...["systemctl", "service", "launchctl", "initctl", "rc-service"].map((name) => [name, services] as const),
  ...["iptables", "ip6tables", "nft", "ufw", "firewall-cmd"].map((name) => [name, firewall] as const),
  ...["crontab", "at", "batch"].map((name) => [name, schedule] as const),
  ...["insmod", "rmmod", "modprobe", "sysctl", "setcap", "chattr", "nsenter", "update-alternatives"].map((name) => [name, system] as const),
  ...["useradd", "userdel", "usermod", "groupadd", "groupdel", "passwd", "chpasswd", "visudo"].map((name) => [name, accounts] as const),
  ...["docker", "podman"].map((name) => [name, containers] as const),
]);
/** Name prefixes of dangerous program families (`mkfs.ext4`). */
export const dangerousPrefixes: ReadonlyArray<readonly [string, string]> = [["mkfs", disks]];

/** Programs that run commands the gateway cannot see, whatever their arguments. */
export const unseenCommands: ReadonlyMap<string, string> = new Map([
  ["parallel", "builds the commands it runs from its input"],
  ["run-parts", "runs every program in a folder"],
]);

/** Builtins whose option (the letter) makes a later command run code the gateway cannot see. */
export const codeLoadingOptions: ReadonlyMap<string, readonly [string, string]> = new Map([
  ["hash", ["p", "makes a command name run the file it names"]],
  ["enable", ["f", "loads a builtin from a shared library"]],
  ["mapfile", ["C", "runs a callback command"]],
  ["readarray", ["C", "runs a callback command"]],
]);
