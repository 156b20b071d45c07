# ssh_args.sh — sourced by the ssh-like launchers hydra calls (launcher_hosts.sh,
# launcher_slurm.sh): ssh_args "$@" skips the options ssh takes (hydra passes -x; those that take
# a value skip it too) and sets host and command_line (the remote command: the words joined by
# spaces, run by a shell, as ssh does). Exits 2 with a usage line when HOST or CMD is missing.
ssh_args() {
  while (($#)); do
    case $1 in
      -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
      -[46AaCfGgKkMNnqsTtVvXxYy]*) shift ;;
      --) shift && break ;;
      *) break ;;
    esac
  done
  (($# >= 2)) || {
    echo "usage: $0 [-x] HOST CMD..." >&2
    exit 2
  }
  host=$1
  shift
  command_line="$*"
}
