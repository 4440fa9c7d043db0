"""Learned position embeddings of image patches: a table whose rows are a 2-D grid of patches (vision towers).

A vision transformer (ViT: Dosovitskiy et al., 2021, eq. 1) cuts an image into a grid of patches,
flattens the grid row by row, puts its own tokens in front (the CLS token; DeiT adds a distillation
token) and adds row p of a learned table to token p. ViT, DeiT and DINOv2 keep the table as an
``nn.Parameter`` of shape [1, tokens, width]; CLIP's and SigLIP's vision towers as an
``nn.Embedding`` (SigLIP has no CLS token). The grid's shape comes from the config:
``image_size // patch_size`` per side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from posviz.hooks import Patch, resolve
from posviz.positions.base import PositionEncoding, PositionRemovalError
from posviz.positions.learned import LearnedTableSpec, PositionEmbeddings


@dataclass(frozen=True)
class PatchGrid:
    """How the rows of a vision tower's position table map to tokens: its own tokens, then a grid of patches.

    Attributes
    ----------
    rows, cols : int
        Patches per column and per row of the image (``image_size // patch_size``).
    special : tuple of str
        The tokens before the patches, in table order (``("CLS",)``; DeiT ``("CLS", "distillation")``;
        SigLIP none).

    Examples
    --------
    >>> grid = PatchGrid(2, 3, ("CLS",))
    >>> grid.num_patches, grid.first_patch, grid.cell(1 + 4)
    (6, 1, (1, 1))
    """

    rows: int
    cols: int
    special: tuple[str, ...] = ()

    @property
    def num_patches(self) -> int:
        """Patches in the grid, ``rows * cols``."""
        return self.rows * self.cols

    @property
    def first_patch(self) -> int:
        """The table row of patch (0, 0): the number of tokens before the patches."""
        return len(self.special)

    def cell(self, row: int) -> tuple[int, int]:
        """The grid cell (grid row, grid column) of table row ``row``, patches numbered row by row.

        Raises
        ------
        ValueError
            For a row of a token before the patches (CLS, distillation) or past the grid.
        """
        patch = row - self.first_patch
        if not 0 <= patch < self.num_patches:
            raise ValueError(f"table row {row} is not a patch (patches are rows {self.first_patch}–"
                             f"{self.first_patch + self.num_patches - 1})")
        return divmod(patch, self.cols)

    def describe(self) -> str:
        """The rows in words: "row 0 is the CLS token, rows 1–16 the 4 × 4 patches, row by row"."""
        names = [f"row {i} the {name} token" for i, name in enumerate(self.special)]
        last = self.first_patch + self.num_patches - 1
        return ", ".join(names + [f"rows {self.first_patch}–{last} the {self.rows} × {self.cols} patches, "
                                  "row by row"])


def config_grid(config, special: tuple[str, ...]) -> PatchGrid:
    """The :class:`PatchGrid` of a vision config (``image_size``, ``patch_size``: an int or a (height, width) pair).

    Parameters
    ----------
    config : transformers.PretrainedConfig
        A vision config (``ViTConfig``, ``CLIPVisionConfig`` …).
    special : tuple of str
        The tokens before the patches.

    Raises
    ------
    AttributeError
        Where the config has no ``image_size`` or ``patch_size``.
    """
    def pair(value) -> tuple[int, int]:
        return (int(value), int(value)) if np.isscalar(value) else (int(value[0]), int(value[1]))

    (height, width), (ph, pw) = pair(config.image_size), pair(config.patch_size)
    return PatchGrid(height // ph, width // pw, tuple(special))


@dataclass
class PatchEmbeddings(PositionEmbeddings):
    """A learned table whose rows are a vision tower's own tokens, then a 2-D grid of patches.

    Attributes
    ----------
    patch_grid : PatchGrid
        Which row is which token: ``tensor[patch_grid.first_patch + r * cols + c]`` is added to the
        patch in grid row r, column c.
    """

    patch_grid: PatchGrid = field(default=None)

    label: ClassVar[str] = "learned position embeddings of image patches"
    formula: ClassVar[str] = (r"z_0 = [\,x_{\mathrm{CLS}};\ x_{1} E;\ \dots;\ x_{N} E\,] + E_{\mathrm{pos}},"
                              r"\quad E_{\mathrm{pos}} \in \mathbb{R}^{(k + N) \times D}")
    vector_name: ClassVar[str] = "patch position embeddings"

    @property
    def grid(self) -> PatchGrid:
        return self.patch_grid

    def describe(self) -> str:
        g = self.patch_grid
        return (f"Learned position embeddings of image patches: row p of `{self.source}` is added to token p "
                f"({g.describe()}; {self.num_positions} rows, width {self.width}). The image is cut into a grid "
                f"of patches, flattened row by row, {' and '.join(g.special) or 'no'} token"
                f"{'s' if len(g.special) > 1 else ''} put in front, and each token gets its row of the table, "
                "learned in pre-training (ViT: Dosovitskiy et al., 2021, eq. 1; k special tokens, N patches).")


@dataclass(frozen=True)
class PatchTableSpec(LearnedTableSpec):
    """The position table of a vision tower: an ``nn.Parameter`` [1, tokens, width] or an ``nn.Embedding``.

    Attributes
    ----------
    path : str
        Path below the base model of the table: the parameter itself (``table_attr`` empty: ViT's
        ``embeddings.position_embeddings``) or the module holding it (CLIP's
        ``vision_model.embeddings.position_embedding``, ``table_attr`` ``"weight"``).
    table_attr : str
        Attribute of the module at ``path`` that holds the table; empty where ``path`` is the parameter.
    vision_config : str
        Attribute of the config holding ``image_size`` and ``patch_size`` (``"vision_config"`` for CLIP
        and SigLIP); empty: the config itself.
    special : tuple of str
        The tokens before the patches (:attr:`PatchGrid.special`).
    """

    table_attr: str = ""
    vision_config: str = ""
    special: tuple[str, ...] = ("CLS",)

    encoding: ClassVar[type[PositionEncoding]] = PatchEmbeddings

    def _table(self, model: nn.Module) -> tuple[torch.Tensor, int] | None:
        """The table [tokens, width] (the leading batch axis of a parameter [1, tokens, width] dropped), offset 0."""
        found = resolve(model, self.path)
        if found is None:
            return None
        table = getattr(found, self.table_attr) if self.table_attr else found
        return (table[0] if table.dim() == 3 else table), 0

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> PatchEmbeddings | None:
        """The table's encoding, its grid from the (vision) config.

        Raises
        ------
        ValueError
            Where the table's rows are not the special tokens plus the config's grid of patches.
        """
        found = self._table(model)
        if found is None:
            return None
        table = found[0]
        grid = config_grid(getattr(config, self.vision_config) if self.vision_config else config, self.special)
        if table.shape[0] != grid.first_patch + grid.num_patches:
            raise ValueError(f"`{self.path}` has {table.shape[0]} rows, not the {grid.first_patch} special "
                             f"token(s) and {grid.rows} × {grid.cols} patches of its config")
        with torch.no_grad():
            return PatchEmbeddings(self.path, int(table.shape[0]), tensor=table.detach().to(torch.float32),
                                   note=self.note, component=self.component, patch_grid=grid)

    def modules(self) -> tuple[str, ...]:
        """The module to make real for a positions-only load: the one holding the parameter (the
        embeddings module, its patch projection and special tokens with it), or the ``nn.Embedding``."""
        return (self.path if self.table_attr else self.path.rpartition(".")[0],)

    def removal(self, model: nn.Module) -> list[Patch]:
        if self.table_attr:
            return super().removal(model)
        if resolve(model, self.path) is None:
            return []
        raise PositionRemovalError(f"`{self.path}` is a parameter added inside the embeddings' forward, not the "
                                   "output of a module, so no forward hook can take it out.")
