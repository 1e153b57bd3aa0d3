"""REST handlers under `/ranktable/`; each validates its input, runs the work off the loop, replies JSON.

The OpenAPI document `openapi.yaml` beside this file describes exactly these routes (a test checks it).
Every method is authorized with jupyter_server's `@authorized` on the `ranktable` resource (the handler's
`auth_resource`): pure computations and listings are `read`, anything that changes state is `write`, a
remote command is `execute`; installing a kernelspec and downloading into the Jupyter root use the standard
`kernelspecs` and `contents` resources. docs/security.md has the table.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ranktable.errors import InputError
from ranktable.server_ext.base import RanktableHandler
from ranktable.server_ext.bodies import logs_request
from ranktable.server_ext.proxy import ForwardProxyHandler
from ranktable.server_ext.stream import StreamHandler

NAME = r"(?P<{}>[^/]+)"


class ConfigHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        self.reply(await self.blocking(self.services.server_config))


class ValidateHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        self.reply(await self.layout("validate"))


class PlanHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        self.reply(await self.layout("plan"))


class LayoutPreviewHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        self.reply(await self.blocking(self.services.jobs.layout_preview, self.json_body()))


class ComposeHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        self.reply(await self.blocking(self.services.jobs.compose, self.json_body()))


class JobsHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        namespace = self.get_query_argument("namespace", None)
        self.reply(await self.blocking(self.services.jobs.list_jobs, namespace))

    @web.authenticated
    @authorized("write")
    async def post(self) -> None:
        self.reply(await self.blocking(self.services.jobs.submit, self.json_body()), status=201)


class PermissionsHandler(RanktableHandler):
    """What this user may do: Jupyter's read/write/execute on `ranktable` and the pool's RBAC (their
    namespace, SelfSubjectAccessReview). A 403 here tells the panel the user may not even read."""

    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        jupyter = {
            action: bool(self.authorizer.is_authorized(self, self.current_user, action, self.auth_resource))
            for action in ("read", "write", "execute")
        }
        self.reply(await self.blocking(self.services.jobs.permissions, jupyter))


class TeamHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        self.reply(await self.blocking(self.services.jobs.team))


class JobHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, namespace: str, name: str) -> None:
        version, description = await self.blocking(self.services.jobs.describe, namespace, name)
        if version is not None:  # a version from the job list's watches: 304 while it is the one the view has
            self.set_header("ETag", f'"{version}"')
            if self.check_etag_header():
                self.set_status(304)
                self.finish()
                return
        self.reply(description)

    @web.authenticated
    @authorized("write")
    async def delete(self, namespace: str, name: str) -> None:
        self.reply(await self.blocking(self.services.jobs.stop, namespace, name))


class JobLayoutHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, namespace: str, name: str) -> None:
        topology = self.get_query_argument("topology_path", None)
        marks = self.get_query_argument("diagnosis", None)
        self.reply(await self.blocking(self.services.jobs.job_layout, namespace, name, topology, marks))


class JobRankTableHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, namespace: str, name: str) -> None:
        self.reply(await self.blocking(self.services.jobs.job_ranktable, namespace, name))


class JobResubmitHandler(RanktableHandler):
    @web.authenticated
    @authorized("write")
    async def post(self, namespace: str, name: str) -> None:
        run = self.get_query_argument("run", None)
        self.reply(await self.blocking(self.services.jobs.resubmit, namespace, name, run), status=201)


class JobResumeHandler(RanktableHandler):
    @web.authenticated
    @authorized("write")
    async def post(self, namespace: str, name: str) -> None:
        scratch = self.get_query_argument("from_scratch", "false") == "true"
        self.reply(await self.blocking(self.services.jobs.resume, namespace, name, scratch), status=201)


class JobLineageHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, namespace: str, name: str) -> None:
        self.reply(await self.blocking(self.services.jobs.lineage, namespace, name))


class RecoveryHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        raw = self.get_query_argument("since", "0")
        try:
            since = float(raw)
        except ValueError:
            raise InputError(
                f"must be a number of seconds since the epoch; got {raw!r}",
                where="since",
                fix="send the `at` of the last event received, or 0",
            ) from None
        self.reply(self.services.jobs.recovery(since))


class JobMetricsHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, namespace: str, name: str) -> None:
        run = self.get_query_argument("run", None)
        fmt = self.get_query_argument("format", "json")
        data = await self.blocking(self.services.observe.metrics, namespace, name, run, fmt)
        if isinstance(data, str):
            self.set_header("Content-Type", "text/csv; charset=utf-8")
            self.set_header("Content-Disposition", f'attachment; filename="{name}-metrics.csv"')
            web.RequestHandler.finish(self, data)  # APIHandler.finish would force application/json
            return
        self.reply(data)


class JobDiagnosisHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, namespace: str, name: str) -> None:
        run = self.get_query_argument("run", None)
        self.reply(await self.blocking(self.services.observe.diagnosis, namespace, name, run))


class JobCompareHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, namespace: str, name: str) -> None:
        a, b = self.get_query_argument("a", None), self.get_query_argument("b", None)
        self.reply(await self.blocking(self.services.observe.compare, namespace, name, a, b))


class JobRunsHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, namespace: str, name: str) -> None:
        self.reply(await self.blocking(self.services.observe.runs, namespace, name))


class JobRunLogsHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, namespace: str, name: str, run: str) -> None:
        args = (self.get_query_argument(k, None) for k in ("node_rank", "errors", "limit"))
        self.reply(await self.blocking(self.services.observe.run_logs, namespace, name, run, *args))


class LogsHandler(RanktableHandler):
    """Logs from anywhere: multipart `files` (a tar is expanded), or JSON ``{"files": [{name, text}]}`` /
    ``{"paths": [...]}`` (files and folders of the Jupyter root); `rank_from` in either."""

    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        uploads, paths, rank_from = await self.blocking(logs_request, self.request)
        answer = await self.blocking(
            partial(self.services.observe.logs, may_read_files=self.may_read_files()),
            uploads,
            paths,
            rank_from,
        )
        self.reply(answer)


class ObserveSettingsHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        self.reply(self.services.observe.settings_json())

    @web.authenticated
    @authorized("write")
    async def put(self) -> None:
        self.reply(await self.blocking(self.services.observe.update_settings, self.json_body()))


class ProfilesHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        self.reply(await self.blocking(self.services.remote.list_profiles))

    @web.authenticated
    @authorized("write")
    async def post(self) -> None:
        self.reply(await self.blocking(self.services.remote.add_profile, self.json_body()), status=201)


class ProfileHandler(RanktableHandler):
    @web.authenticated
    @authorized("write")
    async def patch(self, name: str) -> None:
        self.reply(await self.blocking(self.services.remote.update_profile, name, self.json_body()))

    @web.authenticated
    @authorized("write")
    async def delete(self, name: str) -> None:
        await self.blocking(self.services.remote.remove_profile, name)
        self.reply({"removed": name})


class ProfileTestHandler(RanktableHandler):
    @web.authenticated
    @authorized("write")
    async def post(self, name: str) -> None:
        self.reply(await self.blocking(self.services.remote.test_profile, name, self.json_body()))


class ForwardsHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        self.reply(await self.blocking(self.services.remote.list_forwards))

    @web.authenticated
    @authorized("execute")  # a tunnel reaches the instance's network, as a terminal there would
    async def post(self) -> None:
        self.reply(await self.blocking(self.services.remote.open_forward, self.json_body()), status=201)


class ForwardHandler(RanktableHandler):
    @web.authenticated
    @authorized("write")
    async def delete(self, forward: str) -> None:
        self.reply(await self.blocking(self.services.remote.close_forward, forward))


class RemoteKernelsHandler(RanktableHandler):
    @web.authenticated
    @authorized("read", resource="kernels")
    async def get(self) -> None:
        self.reply(await self.blocking(self.services.remote.list_remote_kernels, self.kernel_manager))


class RemoteKernelHandler(RanktableHandler):
    @web.authenticated
    @authorized("write", resource="kernels")
    async def delete(self, kernel_id: str) -> None:
        self.reply(await self.services.remote.usecases.shutdown_kernel(self.kernel_manager, kernel_id))


class RemoteKernelAttachHandler(RanktableHandler):
    @web.authenticated
    @authorized("write", resource="kernels")
    async def post(self, kernel_id: str) -> None:
        self.reply(await self.services.remote.usecases.attach_kernel(self.kernel_manager, kernel_id))


class KernelHandler(RanktableHandler):
    @web.authenticated
    @authorized("write", resource="kernelspecs")
    async def post(self, profile: str) -> None:
        self.reply(
            await self.blocking(self.services.remote.install_kernel, profile, self.json_body()), status=201
        )


class _OperationStarter(RanktableHandler):
    prepare_name = ""

    async def start_operation(self) -> None:
        # validation (profile exists, paths confined) happens before the 202; the work runs afterwards
        prepare = getattr(self.services.remote, self.prepare_name)
        kind, title, fn = await self.blocking(prepare, self.json_body())
        op = self.services.hub.start(kind, title, fn)
        self.reply({"operation": op.id, "kind": op.kind, "title": op.title}, status=202)


class SyncHandler(_OperationStarter):
    prepare_name = "prepare_sync"

    @web.authenticated
    @authorized("write")
    async def post(self) -> None:
        await self.start_operation()


class DownloadHandler(_OperationStarter):
    """Writes into the Jupyter root, so it needs the standard `contents` write permission."""

    prepare_name = "prepare_download"

    @web.authenticated
    @authorized("write", resource="contents")
    async def post(self) -> None:
        await self.start_operation()


class RunHandler(_OperationStarter):
    """Runs a shell command on the remote host: `execute`, as jupyter_server asks of terminals and kernels."""

    prepare_name = "prepare_run"

    @web.authenticated
    @authorized("execute")
    async def post(self) -> None:
        await self.start_operation()


class OperationHandler(RanktableHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, operation: str) -> None:
        self.reply(self.services.hub.get(operation).summary())

    @web.authenticated
    @authorized("write")
    async def delete(self, operation: str) -> None:
        op = self.services.hub.get(operation)
        op.cancel.set()
        self.reply(op.summary())


def _job(suffix: str = "") -> str:
    return r"/ranktable/jobs/" + NAME.format("namespace") + "/" + NAME.format("name") + suffix


ROUTES: list[tuple[str, Any]] = [
    (r"/ranktable/config", ConfigHandler),
    (r"/ranktable/validate", ValidateHandler),
    (r"/ranktable/plan", PlanHandler),
    (r"/ranktable/layout/preview", LayoutPreviewHandler),
    (r"/ranktable/jobs/compose", ComposeHandler),
    (r"/ranktable/jobs", JobsHandler),
    (r"/ranktable/permissions", PermissionsHandler),
    (r"/ranktable/team", TeamHandler),
    (_job(), JobHandler),
    (_job("/layout"), JobLayoutHandler),
    (_job("/ranktable"), JobRankTableHandler),
    (_job("/resubmit"), JobResubmitHandler),
    (_job("/resume"), JobResumeHandler),
    (_job("/lineage"), JobLineageHandler),
    (r"/ranktable/recovery", RecoveryHandler),
    (_job("/metrics"), JobMetricsHandler),
    (_job("/diagnosis"), JobDiagnosisHandler),
    (_job("/compare"), JobCompareHandler),
    (_job("/runs"), JobRunsHandler),
    (_job("/runs/") + NAME.format("run") + "/logs", JobRunLogsHandler),
    (r"/ranktable/logs", LogsHandler),
    (r"/ranktable/observe/settings", ObserveSettingsHandler),
    (r"/ranktable/profiles", ProfilesHandler),
    (r"/ranktable/profiles/" + NAME.format("name"), ProfileHandler),
    (r"/ranktable/profiles/" + NAME.format("name") + "/test", ProfileTestHandler),
    (r"/ranktable/kernels/" + NAME.format("profile"), KernelHandler),
    (r"/ranktable/remote-kernels", RemoteKernelsHandler),
    (r"/ranktable/remote-kernels/" + NAME.format("kernel_id"), RemoteKernelHandler),
    (r"/ranktable/remote-kernels/" + NAME.format("kernel_id") + "/attach", RemoteKernelAttachHandler),
    (r"/ranktable/forwards", ForwardsHandler),
    (r"/ranktable/forwards/" + NAME.format("forward"), ForwardHandler),
    (r"/ranktable/forwards/" + NAME.format("forward") + r"/proxy/(?P<path>.*)", ForwardProxyHandler),
    (r"/ranktable/sync", SyncHandler),
    (r"/ranktable/download", DownloadHandler),
    (r"/ranktable/run", RunHandler),
    (r"/ranktable/operations/" + NAME.format("operation"), OperationHandler),
    (r"/ranktable/stream", StreamHandler),
]
