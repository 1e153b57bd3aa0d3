"""The pool's behaviour behind the API: Volcano, the platform's plugins, a kubelet running processes."""
