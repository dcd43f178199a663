# shellcheck shell=bash
# Source this in CI before running pytest:   . tests/ci_services.sh
#
# Makes sure the binaries used by tests/servers.py are present:
#   * redis-server                          (apt package: redis-server)
#   * PostgreSQL server binaries (initdb)   (apt package: postgresql)
#   * dovecot with IMAP                     (apt package: dovecot-imapd; tests/mail_servers.py)
#   * caddy, docker-compose, systemd-analyze (apt packages: caddy, docker-compose, systemd;
#     tests/e2e/test_deploy.py checks deploy/ with them; no service is started)
#   * chromium (apt package: chromium; tests/e2e/test_console_browser.py drives it with
#     Playwright's Python package, never `playwright install`)
# The tests start their own throwaway servers on random 127.0.0.1 ports, so
# any system service the packages start is not used (and does not conflict).
#
# Safe to source: it does not change shell options; its status is non-zero
# only if apt-get failed.

_valet_ci_services() {
    local sudo="" pkgs=()

    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo="sudo"
        else
            echo "ci_services.sh: not root and no sudo; cannot install packages" >&2
        fi
    fi

    if ! command -v redis-server >/dev/null 2>&1 \
        && [ ! -x /usr/bin/redis-server ] && [ ! -x /usr/local/bin/redis-server ]; then
        pkgs+=(redis-server)
    fi

    if [ -n "${VALET_PG_BIN:-}" ] && [ -x "${VALET_PG_BIN%/}/initdb" ]; then
        :
    elif ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
        pkgs+=(postgresql)
    fi

    if [ ! -x /usr/sbin/dovecot ] && ! command -v dovecot >/dev/null 2>&1; then
        pkgs+=(dovecot-imapd)
    fi

    command -v caddy >/dev/null 2>&1 || pkgs+=(caddy)
    command -v docker-compose >/dev/null 2>&1 || pkgs+=(docker-compose)
    command -v systemd-analyze >/dev/null 2>&1 || pkgs+=(systemd)
    [ -x /usr/bin/chromium ] || pkgs+=(chromium)

    if [ "${#pkgs[@]}" -eq 0 ]; then
        echo "ci_services.sh: redis-server, PostgreSQL, dovecot, caddy, docker-compose," \
             "systemd-analyze and chromium already present"
        return 0
    fi

    echo "ci_services.sh: installing ${pkgs[*]}"
    $sudo apt-get update || return 1
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}" \
        || return 1

    command -v redis-server >/dev/null 2>&1 || echo "ci_services.sh: redis-server still missing" >&2
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
        || echo "ci_services.sh: PostgreSQL initdb still missing" >&2
    [ -x /usr/sbin/dovecot ] || command -v dovecot >/dev/null 2>&1 \
        || echo "ci_services.sh: dovecot still missing" >&2
    for tool in caddy docker-compose systemd-analyze; do
        command -v "$tool" >/dev/null 2>&1 || echo "ci_services.sh: $tool still missing" >&2
    done
    [ -x /usr/bin/chromium ] || echo "ci_services.sh: chromium still missing" >&2
}

_valet_ci_services
_valet_ci_services_rc=$?
unset -f _valet_ci_services
# Non-zero status if apt-get failed: `return` when sourced, `exit` when executed.
return "$_valet_ci_services_rc" 2>/dev/null || exit "$_valet_ci_services_rc"
