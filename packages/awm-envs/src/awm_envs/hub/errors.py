"""Typed errors of ``awm envs pull`` / ``awm envs push``, each saying what to do next."""

from __future__ import annotations

from awm_core.errors import AWMError


class HubError(AWMError):
    """Base class: something about an environment bundle on the Hugging Face hub went wrong."""


class HubUnavailableError(HubError):
    """``huggingface_hub`` is not installed (it is the optional ``[hub]`` extra)."""

    def __init__(self) -> None:
        super().__init__(
            "awm envs pull/push need the huggingface_hub package: pip install 'awm-envs[hub]'"
        )


class HubRepoNotFoundError(HubError):
    """The repository (or the revision asked for) does not exist, or is private to others."""

    def __init__(self, repo_id: str, repo_type: str, endpoint: str, revision: str | None) -> None:
        self.repo_id = repo_id
        self.repo_type = repo_type
        self.revision = revision
        at = f" at revision {revision!r}" if revision else ""
        super().__init__(
            f"no {repo_type} repository {repo_id!r}{at} on {endpoint}: check the name "
            f"(OWNER/NAME), --repo-type, --revision, and for a private repository your token "
            f"(HF_TOKEN or `hf auth login`)"
        )


class HubConnectionError(HubError):
    """The hub could not be reached (network down, wrong endpoint, server error)."""

    def __init__(self, endpoint: str, detail: str) -> None:
        self.endpoint = endpoint
        super().__init__(
            f"cannot reach the hub at {endpoint}: {detail}. Check your network connection "
            f"and the endpoint (--endpoint or HF_ENDPOINT), then try again"
        )


class HubPermissionError(HubError):
    """The hub refused the request (no token, or a token without write access)."""

    def __init__(self, repo_id: str, detail: str) -> None:
        self.repo_id = repo_id
        super().__init__(
            f"the hub refused access to {repo_id!r} ({detail}): log in with `hf auth login` "
            f"or set HF_TOKEN to a token with write access to that namespace"
        )


class NotABundleRepoError(HubError):
    """The repository holds no awm environment bundle (or one pushed without its content record)."""

    def __init__(self, repo_id: str, reason: str, files: list[str]) -> None:
        self.repo_id = repo_id
        self.files = sorted(files)
        shown = ", ".join(self.files[:12]) + (" ..." if len(self.files) > 12 else "")
        super().__init__(
            f"{repo_id!r} is not an awm environment bundle: {reason} (files: {shown or 'none'}). "
            f"Bundles are published with `awm envs push`"
        )


class BundleIntegrityError(HubError):
    """A downloaded bundle does not match the content record it was pushed with."""

    def __init__(self, repo_id: str, problems: list[str]) -> None:
        self.repo_id = repo_id
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"the bundle downloaded from {repo_id!r} failed its content check and was discarded "
            f"(nothing was installed):\n{lines}\n"
            f"Pull again; if it persists, the repository was edited outside `awm envs push`"
        )


class PushRefusedError(HubError):
    """``awm envs push`` was given a folder that does not load as a bundle; nothing was uploaded."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"not pushing {path}: it does not load as an environment bundle "
            f"({len(self.problems)} problem(s)):\n{lines}\n"
            f"Fix them (`awm envs show {path}` lists them too) and push again"
        )


class PulledBundleConflictError(HubError):
    """A different bundle already lives under the name a pull would install to."""

    def __init__(self, name: str, path: str, origin: str) -> None:
        self.name = name
        super().__init__(
            f"{path} already holds {origin}; pass --as OTHER_NAME to keep both, "
            f"or --force to replace it"
        )
