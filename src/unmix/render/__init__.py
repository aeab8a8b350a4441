"""Image observation models x = render(z), rendered locally on the CPU in batched torch.

* :class:`SpritesRenderer` / :class:`SpritesLatents` — one anti-aliased shape on black with
  factors (x, y, scale, hue[, rotation]) and Beta latents (paper 004, Sec. 4.3).
* :class:`SceneRenderer` — 3DIdent-like scenes: an asymmetric object above a coloured ground lit
  by a spotlight, 10 factors in the unit box (paper 000, Appx A.4).

Both map factors in :math:`[0, 1]^d` to float32 images ``(..., 3, H, W)`` in :math:`[0, 1]`;
see ``docs/render.md``.
"""

from unmix.render.module import RenderMixing
from unmix.render.scenes3d import SCENE_FACTOR_NAMES, SceneRenderer
from unmix.render.sprites import SPRITES_FACTOR_NAMES, SpritesLatents, SpritesRenderer, hsv_to_rgb

__all__ = [
    "RenderMixing",
    "SCENE_FACTOR_NAMES",
    "SPRITES_FACTOR_NAMES",
    "SceneRenderer",
    "SpritesLatents",
    "SpritesRenderer",
    "hsv_to_rgb",
]
