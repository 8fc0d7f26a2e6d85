import pytest

from avhb.errors import UserError
from avhb.media import ChunkSpec, FrameSpec, MediaSpec


def test_full_block():
    m = MediaSpec.from_dict({
        "video": "{{video_path}}", "audio": "{{audio_path}}", "fps": 2, "max_frames": 64,
        "segment": ["start", "end"], "include_last_frame": True, "max_side": 448,
        "max_pixels": 200704, "audio_rate": 24000, "audio_in_video": True,
        "audio_missing": "silence", "budget": "refuse",
        "chunks": {"seconds": 120, "fps": 0.5, "width": 512, "height": 384},
        "boxes": "objectAnnotationListMap", "decoder": "pyav"})
    assert m.segment == ("start", "end") and m.chunks == ChunkSpec(120.0, 0.5, 512, 384)
    assert m.fps == 2.0 and m.audio_rate == 24000 and m.audio_in_video
    assert m.frame_spec((1.0, 9.5)) == FrameSpec(fps=2.0, max_frames=64, segment=(1.0, 9.5),
                                                 include_last=True, max_side=448,
                                                 max_pixels=200704, decoder="pyav")
    assert m.frame_spec(frames=16).frames == 16 and m.frame_spec(frames=16).fps is None


def test_defaults():
    m = MediaSpec.from_dict({})
    assert (m.audio_rate, m.audio_in_video, m.audio_missing, m.budget, m.decoder) == \
        (16000, False, "error", "clamp", "auto")
    assert m.frame_spec().frames == 8
    assert MediaSpec.from_dict(None) == MediaSpec()


@pytest.mark.parametrize("block, msg", [
    ({"frame": 8}, "unknown key"), ({"frames": 0}, "media.frames"), ({"fps": 0}, "media.fps"),
    ({"frames": 8, "fps": 1}, "not both"), ({"segment": [1]}, "media.segment"),
    ({"budget": "drop"}, "media.budget"), ({"decoder": "cv2"}, "media.decoder"),
    ({"audio_in_video": "yes"}, "media.audio_in_video"), ({"chunks": {"secs": 1}}, "chunks"),
    ({"frames": True}, "media.frames"), ([1, 2], "mapping")])
def test_errors(block, msg):
    with pytest.raises(UserError, match=msg):
        MediaSpec.from_dict(block)


def test_frame_size():
    """``frame_size: [w, h]`` gives every video frame that exact size; a
    part's own width/height (a long-video chunk) wins; unset it leaves the
    request key as it was before the setting existed."""
    m = MediaSpec.from_dict({"fps": 5, "frame_size": [512, 384], "max_side": 256})
    assert m.frame_size == (512, 384) and m.frame_spec().size == (512, 384)
    assert m.frame_spec(sampling={"fps": 0.5, "width": 64, "height": 48}).size == (64, 48)
    assert m.to_key()["frame_size"] == [512, 384]
    assert "frame_size" not in MediaSpec.from_dict({"fps": 5, "frame_size": None}).to_key()
    for bad in ([512], [0, 384], "512x384", [512, 20000]):
        with pytest.raises(UserError, match="frame_size"):
            MediaSpec.from_dict({"frame_size": bad})


def test_an_override_of_frames_or_fps_replaces_the_other_in_the_block():
    """``--media`` / ``RunOptions.media`` over a task's block: frames
    replaces the block's fps and fps its frames; the other settings merge
    key by key; both at once is an error; applying the rule twice is the
    same as once."""
    from avhb.media.spec import media_overrides, merged_media

    block = {"video": "{{v}}", "fps": 5, "max_frames": 64, "max_side": 448}
    over_fps = merged_media(block, {"frames": 8})
    assert (over_fps.frames, over_fps.fps, over_fps.max_frames, over_fps.max_side) == (8, None, 64, 448)
    over_frames = merged_media({"video": "{{v}}", "frames": 16}, {"fps": 2})
    assert (over_frames.frames, over_frames.fps) == (None, 2.0)
    assert merged_media(block, {"max_side": 224}).fps == 5.0  # no frames/fps given: the block's rate stays
    assert merged_media(block, None) == merged_media(block, {}) == MediaSpec.from_dict(block)
    assert media_overrides({"frames": 8}) == {"frames": 8, "fps": None}
    assert media_overrides({"fps": 2}) == {"fps": 2, "frames": None}
    assert media_overrides(media_overrides({"frames": 8})) == media_overrides({"frames": 8})
    with pytest.raises(UserError, match=r"--media: give frames or fps, not both"):
        media_overrides({"frames": 8, "fps": 2})
    with pytest.raises(UserError, match=r"--media: unknown key\(s\) frame"):
        media_overrides({"frame": 8})
    with pytest.raises(UserError, match=r"--media.frames: must be a positive integer"):
        merged_media(block, {"frames": 0})
