#!/bin/bash
#
# devstack plugin of resq-nova: "enable_plugin resq-nova <git url>" and the
# services resq-agent (compute hosts) and resq-optimizer (controller).
# devstack sources this file with the phase as its arguments.

source $RESQ_DIR/devstack/lib/resq

if [[ "$1" == "stack" ]]; then
    case "$2" in
        install)
            echo_summary "Installing resq-nova"
            install_resq
            ;;
        post-config)
            echo_summary "Configuring resq-nova"
            configure_resq
            ;;
        extra)
            echo_summary "Starting resq-nova"
            start_resq
            if is_service_enabled n-api; then
                create_resq_examples
            fi
            ;;
    esac
fi

if [[ "$1" == "unstack" ]]; then
    stop_resq
fi

if [[ "$1" == "clean" ]]; then
    cleanup_resq
fi
