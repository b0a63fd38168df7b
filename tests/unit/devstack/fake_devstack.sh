#!/bin/bash
# A stand-in for the parts of devstack's function library the resq-nova
# plugin uses. The ini helpers really edit files, with devstack's semantics
# (inc/ini-config): sections end at the next "[...]" line, iniset replaces
# every line of the option in the section or adds one right after the
# section header (adding the section at the end of the file, and the file,
# when missing), iniadd appends values without removing duplicates, and
# iniset_multiline rewrites the option as one line per value.
# Everything that would touch the host is recorded in $FAKE_DEVSTACK_CALLS,
# one call per line, and (except chown) run without privileges.

function _fake_record {
    local IFS=' '
    echo "$*" >> "$FAKE_DEVSTACK_CALLS"
}

# _fake_ini MODE FILE SECTION OPTION [VALUE]: the ini editor behind the
# helpers. Modes: get (every value, one a line), set, delete, comment.
function _fake_ini {
    local mode=$1 file=$2 section=$3 option=$4 value=$5
    if [[ "$mode" == get ]]; then
        [[ -f "$file" ]] || return 0
    else
        touch "$file"
    fi
    local tmp
    tmp=$(mktemp)
    MODE=$mode SECTION=$section OPTION=$option VALUE=$value awk '
        function is_header(line) { return line ~ /^\[.*\]/ }
        function is_option(line,   rest) {
            if (index(line, ENVIRON["OPTION"]) != 1) return 0
            rest = substr(line, length(ENVIRON["OPTION"]) + 1)
            return rest ~ /^[ \t]*=/
        }
        function value_of(line) {
            sub(/^[^=]*=[ \t]*/, "", line)
            sub(/[ \t]+$/, "", line)
            return line
        }
        BEGIN { mode = ENVIRON["MODE"]; insec = 0; seen = 0; done = 0 }
        {
            line = $0
            if (is_header(line)) {
                insec = (line == "[" ENVIRON["SECTION"] "]" ||
                         index(line, "[" ENVIRON["SECTION"] "]") == 1)
                if (insec) seen = 1
                if (mode != "get") print line
                if (insec && mode == "insert") {
                    print ENVIRON["OPTION"] " = " ENVIRON["VALUE"]
                }
                next
            }
            if (insec && is_option(line)) {
                if (mode == "get") { print value_of(line); next }
                if (mode == "set") {
                    match(line, /^[^=]*=[ \t]*/)
                    print substr(line, 1, RLENGTH) ENVIRON["VALUE"]
                    next
                }
                if (mode == "delete") next
                if (mode == "comment") { print "#" line; next }
            }
            if (mode != "get") print line
        }
        END {
            if (mode == "get" || mode == "comment" || mode == "delete") exit
            if (!seen && (mode == "set" || mode == "insert")) {
                print ""
                print "[" ENVIRON["SECTION"] "]"
                print ENVIRON["OPTION"] " = " ENVIRON["VALUE"]
            }
        }' "$file" > "$tmp"
    if [[ "$mode" == get ]]; then
        cat "$tmp"
    else
        cat "$tmp" > "$file"
    fi
    rm -f "$tmp"
}

function _fake_strip_sudo {
    if [[ "$1" == "-sudo" ]]; then
        return 0
    fi
    return 1
}

function ini_has_option {
    _fake_strip_sudo "$1" && shift
    [[ -n "$(_fake_ini get "$1" "$2" "$3")" ]]
}

function iniget {
    local values
    values=$(_fake_ini get "$1" "$2" "$3")
    # devstack echoes the first line's value unquoted: whitespace collapses.
    echo ${values%%$'\n'*}
}

function iniget_multiline {
    local values
    values=$(_fake_ini get "$1" "$2" "$3")
    echo ${values}
}

function iniset {
    _fake_strip_sudo "$1" && shift
    local file=$1 section=$2 option=$3 value
    # devstack echoes the value unquoted: whitespace collapses.
    value=$(echo $4)
    [[ -z "$section" || -z "$option" ]] && return 0
    if ini_has_option "$file" "$section" "$option"; then
        _fake_ini set "$file" "$section" "$option" "$value"
    else
        _fake_ini insert "$file" "$section" "$option" "$value"
    fi
}

function iniset_multiline {
    _fake_strip_sudo "$1" && shift
    local file=$1 section=$2 option=$3
    shift 3
    _fake_ini delete "$file" "$section" "$option"
    local values=() v i
    for v in $@; do
        values+=("$v")
    done
    # Each value goes right after the header: add them last to first.
    for (( i=${#values[@]}-1; i>=0; i-- )); do
        _fake_ini insert "$file" "$section" "$option" "${values[$i]}"
    done
}

function iniadd {
    _fake_strip_sudo "$1" && shift
    local file=$1 section=$2 option=$3
    shift 3
    iniset_multiline "$file" "$section" "$option" \
        $(iniget_multiline "$file" "$section" "$option") "$@"
}

function inicomment {
    _fake_strip_sudo "$1" && shift
    _fake_ini comment "$1" "$2" "$3"
}

function trueorfalse {
    local default=$1 name=$2
    local value=${!name:-$default}
    case "${value,,}" in
        1|yes|true|on) echo True ;;
        0|no|false|off) echo False ;;
        *) echo "$default" ;;
    esac
}

function is_service_enabled {
    local service
    for service in "$@"; do
        [[ ",${ENABLED_SERVICES}," == *",${service},"* ]] && return 0
        [[ $service == nova && ",${ENABLED_SERVICES}" == *",n-"* ]] && return 0
    done
    return 1
}

function die {
    _fake_record die "$@"
    echo "ERROR: $*" >&2
    exit 1
}

function warn {
    _fake_record warn "$@"
}

function echo_summary {
    _fake_record echo_summary "$@"
}

function define_plugin { _fake_record define_plugin "$@"; }
function setup_develop { _fake_record setup_develop "$@"; }
function run_process { _fake_record run_process "$@"; }
function stop_process { _fake_record stop_process "$@"; }
function openstack { _fake_record openstack "$@"; }
function recreate_database { _fake_record recreate_database "$@"; }
function database_connection_url { echo "mysql+pymysql://root:pw@127.0.0.1/$1?charset=utf8"; }
function create_service_user { _fake_record create_service_user "$@"; }
function get_or_create_service { _fake_record get_or_create_service "$@"; echo svc-id; }
function get_or_create_endpoint { _fake_record get_or_create_endpoint "$@"; echo ep-id; }
function remove_uwsgi_config { _fake_record remove_uwsgi_config "$@"; }
# As devstack's lib/keystone writes them (2026).
function configure_keystoneauth {
    local conf_file=$1 admin_user=$2 section=$3
    iniset $conf_file $section auth_type password
    iniset $conf_file $section interface public
    iniset $conf_file $section auth_url $KEYSTONE_SERVICE_URI
    iniset $conf_file $section username $admin_user
    iniset $conf_file $section password $SERVICE_PASSWORD
    iniset $conf_file $section user_domain_name "$SERVICE_DOMAIN_NAME"
    iniset $conf_file $section project_name $SERVICE_PROJECT_NAME
    iniset $conf_file $section project_domain_name "$SERVICE_DOMAIN_NAME"
}
function configure_keystone_authtoken_middleware {
    _fake_record configure_keystone_authtoken_middleware "$@"
    local conf_file=$1 admin_user=$2 section=${3:-keystone_authtoken}
    configure_keystoneauth $conf_file $admin_user $section
    iniset $conf_file $section www_authenticate_uri $KEYSTONE_SERVICE_URI
    iniset $conf_file $section cafile "$SSL_BUNDLE_FILE"
    iniset $conf_file $section memcached_servers "$MEMCACHE_SERVERS"
    if [[ -n "$4" ]]; then
        iniset $conf_file $section service_type $4
    fi
}
# As devstack's lib/apache writes it (2026): a module path when it looks
# like one, else a WSGI file; a unix socket Apache proxies $3 to, unless
# $4 names an address to serve HTTP on. Apache itself is only recorded.
function write_uwsgi_config {
    _fake_write_uwsgi_config "$@"
}
function _fake_write_uwsgi_config {
    _fake_record write_uwsgi_config "$@"
    local conf=$1 wsgi=$2 url=$3 http=$4 name=$5
    [[ -z "$name" ]] && name=$(basename $wsgi)
    rm -rf $conf
    if [[ "$wsgi" =~ ^[a-zA-Z0-9_.]+:[a-zA-Z0-9_]+$ ]]; then
        iniset "$conf" uwsgi module "$wsgi"
    else
        iniset "$conf" uwsgi wsgi-file "$wsgi"
    fi
    iniset "$conf" uwsgi processes ${API_WORKERS:-2}
    iniset "$conf" uwsgi master true
    iniset "$conf" uwsgi die-on-term true
    iniset "$conf" uwsgi exit-on-reload false
    iniset "$conf" uwsgi enable-threads true
    iniset "$conf" uwsgi plugins http,python3
    iniset "$conf" uwsgi thunder-lock true
    iniset "$conf" uwsgi buffer-size 65535
    iniset "$conf" uwsgi add-header "Connection: close"
    iniset "$conf" uwsgi lazy-apps true
    if [[ -n "$http" ]]; then
        iniset "$conf" uwsgi http $http
    else
        iniset "$conf" uwsgi socket "${FAKE_UWSGI_SOCKET_DIR:-/var/run/uwsgi}/$name.socket"
        iniset "$conf" uwsgi chmod-socket 666
        _fake_record apache_proxy "$url" "$name"
    fi
}
# lib/apache's site files (under the calls file's directory), modules and
# restarts.
function apache_site_config_for {
    mkdir -p "$(dirname "$FAKE_DEVSTACK_CALLS")/apache"
    echo "$(dirname "$FAKE_DEVSTACK_CALLS")/apache/$1.conf"
}
function enable_apache_mod { _fake_record enable_apache_mod "$@"; }
function restart_apache_server { _fake_record restart_apache_server "$@"; }
function sleep { _fake_record sleep "$@"; }

function get_python_exec_prefix {
    echo "$FAKE_DEVSTACK_BIN"
}

function get_transport_url {
    echo "rabbit://stackrabbit:secret@127.0.0.1:5672/$1"
}

function sudo {
    _fake_record sudo "$@"
    # Tests run as any user: ownership changes are only recorded.
    [[ "$1" == chown ]] && return 0
    if [[ "$1" == install ]]; then
        shift
        local args=()
        while [[ $# -gt 0 ]]; do
            case "$1" in
                -o|-g) shift 2 ;;
                *) args+=("$1"); shift ;;
            esac
        done
        install "${args[@]}"
        return
    fi
    "$@"
}
