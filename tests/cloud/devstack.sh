#!/bin/bash
# devstack's functions, acting for real, for the all-in-one cloud
# (tests/cloud/aio.py). Sourced after tests/unit/devstack/fake_devstack.sh,
# whose ini helpers edit files with devstack's semantics; every function
# here replaces one of its recorders with what devstack itself does on a
# node: run_process starts the service as $STACK_USER (in the compute
# host's namespaces, where the plugin runs), recreate_database and the
# Keystone helpers change the real MariaDB and Keystone, write_uwsgi_config
# puts the service behind the real Apache, sudo runs as root.
#
# The plugin runs as $STACK_USER with passwordless sudo, in the node's
# namespaces, as devstack runs it on a node. Set by aio.py: AIO_RUN_DIR, AIO_LOG_DIR, AIO_APACHE_SITES, AIO_BIN,
# AIO_DB_PREFIX, AIO_TRANSPORT_URL, AIO_PATH (PATH for services), and
# devstack's own variables (STACK_USER, DATA_DIR, KEYSTONE_SERVICE_URI...).

function sudo {
    _fake_record sudo "$@"
    command sudo "$@"
}

function setup_develop {
    # tox installed resq-nova in development mode already.
    _fake_record setup_develop "$@"
}

function die {
    echo "ERROR: devstack plugin: line $1: ${*:2}" >&2
    exit 1
}

function warn {
    echo "WARNING: devstack plugin: line $1: ${*:2}" >&2
}

function echo_summary {
    echo "[devstack] $*"
}

function sleep {
    command sleep "$@"
}

function get_python_exec_prefix {
    echo "$AIO_BIN"
}

function get_transport_url {
    echo "$AIO_TRANSPORT_URL"
}

function _aio_pid_alive {
    local pid_file=$1
    # /proc, not kill -0: a service of root's cannot be signalled by the
    # stack user.
    [[ -f $pid_file && -d /proc/$(cat $pid_file) ]]
}

# run_process NAME COMMAND [GROUP [USER]]: as devstack's systemd unit
# does, COMMAND as USER ($STACK_USER by default; root through sudo), its
# output in a log; here also in the node's namespaces.
function run_process {
    local name=$1 command=$2 user=${4:-$STACK_USER}
    local pid_file=$AIO_RUN_DIR/$name.pid
    if _aio_pid_alive $pid_file; then
        echo "[devstack] $name runs already (pid $(cat $pid_file))"
        return 0
    fi
    mkdir -p $AIO_RUN_DIR $AIO_LOG_DIR
    local home as=()
    home=$(getent passwd $user | cut -d: -f6)
    if [[ "$user" != "$(id -un)" ]]; then
        as=(command sudo -n -u $user)
    fi
    "${as[@]}" setsid env -i HOME=$home USER=$user PATH=$AIO_PATH \
        LANG=C.UTF-8 bash -c "exec $command" \
        >> $AIO_LOG_DIR/$name.log 2>&1 < /dev/null &
    echo $! > $pid_file
    echo $user > $AIO_RUN_DIR/$name.user
    echo "[devstack] started $name (pid $!) as $user: $command"
}

function stop_process {
    local name=$1
    local pid_file=$AIO_RUN_DIR/$name.pid
    if _aio_pid_alive $pid_file; then
        local pid as=()
        pid=$(cat $pid_file)
        if [[ -f $AIO_RUN_DIR/$name.user && "$(cat $AIO_RUN_DIR/$name.user)" != "$(id -un)" ]]; then
            as=(command sudo -n)
        fi
        "${as[@]}" kill -TERM $pid
        local i
        for i in $(seq 100); do
            [[ -d /proc/$pid ]] || break
            command sleep 0.1
        done
        "${as[@]}" kill -KILL $pid 2>/dev/null || true
    fi
    rm -f $pid_file $AIO_RUN_DIR/$name.user
}

function openstack {
    $AIO_BIN/openstack "$@"
}

function _aio_mysql {
    mysql -uroot -h127.0.0.1 -e "$1"
}

function recreate_database {
    local db=$AIO_DB_PREFIX$1
    _aio_mysql "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db CHARACTER SET utf8mb4;"
}

function database_connection_url {
    echo "mysql+pymysql://root@127.0.0.1/$AIO_DB_PREFIX$1?charset=utf8"
}

# create_service_user NAME [ROLE]: a user in the service project with the
# service role (devstack adds ROLE when it is given, "service" otherwise).
function create_service_user {
    local name=$1 role=${2:-service}
    openstack user create --or-show --domain $SERVICE_DOMAIN_NAME \
        --password $SERVICE_PASSWORD $name -f value -c id
    openstack role add --project $SERVICE_PROJECT_NAME \
        --project-domain $SERVICE_DOMAIN_NAME --user $name \
        --user-domain $SERVICE_DOMAIN_NAME $role
}

function get_or_create_service {
    local name=$1 type=$2 description=$3
    local id
    id=$(openstack service show $name -f value -c id 2>/dev/null) || \
        id=$(openstack service create --name $name \
             --description "$description" $type -f value -c id)
    echo $id
}

function get_or_create_endpoint {
    local service=$1 region=$2 url=$3
    local interface id
    for interface in public internal; do
        id=$(openstack endpoint list --service $service --region $region \
             --interface $interface -f value -c ID)
        if [[ -z "$id" ]]; then
            id=$(openstack endpoint create --region $region $service \
                 $interface $url -f value -c id)
        fi
    done
    echo $id
}

# write_uwsgi_config: as devstack's lib/apache, the uwsgi file with a
# unix socket and the Apache proxy from URL to it.
function write_uwsgi_config {
    local conf=$1 wsgi=$2 url=$3 http=$4 name=$5
    FAKE_UWSGI_SOCKET_DIR=$AIO_UWSGI_SOCKET_DIR _fake_write_uwsgi_config "$@"
    [[ -z "$name" ]] && name=$(basename $wsgi)
    if [[ -z "$http" ]]; then
        mkdir -p $AIO_APACHE_SITES
        echo "ProxyPass \"$url\" \"unix:$AIO_UWSGI_SOCKET_DIR/$name.socket|uwsgi://uwsgi-uds-$name\" retry=0 acquire=1" \
            > $AIO_APACHE_SITES/$name.conf
    fi
}

function remove_uwsgi_config {
    local conf=$1 name=$2
    rm -f $conf $AIO_APACHE_SITES/$name.conf
}
