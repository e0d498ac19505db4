"""Messages posted while their session had an active run wait in ``pending_messages`` (with a run
in the new ``pending`` status) until the runs before them end; a message keeps the time it was
posted (``created_at`` is a default, no longer set on insert)."""

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0002_memoryfile_skill'),
        ('runs', '0004_state_json_text'),
    ]

    operations = [
        migrations.CreateModel(
            name='PendingMessage',
            fields=[
                ('position', models.BigAutoField(primary_key=True, serialize=False)),
                ('message_id', models.UUIDField(default=uuid.uuid4, help_text='The id the message has once it joins the history.', unique=True)),
                ('content', models.JSONField(help_text='A list of content blocks.')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
            ],
            options={
                'db_table': 'pending_messages',
            },
        ),
        migrations.RemoveConstraint(
            model_name='run',
            name='run_status_valid',
        ),
        migrations.AlterField(
            model_name='message',
            name='created_at',
            field=models.DateTimeField(default=django.utils.timezone.now, editable=False),
        ),
        migrations.AlterField(
            model_name='run',
            name='status',
            field=models.CharField(choices=[('pending', 'Pending'), ('queued', 'Queued'), ('running', 'Running'), ('awaiting_approval', 'Awaiting Approval'), ('completed', 'Completed'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=32),
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['pending', 'queued', 'running', 'awaiting_approval', 'completed', 'failed', 'cancelled'])), name='run_status_valid'),
        ),
        migrations.AddField(
            model_name='pendingmessage',
            name='run',
            field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='pending_message', to='runs.run'),
        ),
        migrations.AddField(
            model_name='pendingmessage',
            name='session',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='pending_messages', to='runs.session'),
        ),
        migrations.AddIndex(
            model_name='pendingmessage',
            index=models.Index(fields=['session', 'position'], name='pending_mes_session_0c7e15_idx'),
        ),
    ]
